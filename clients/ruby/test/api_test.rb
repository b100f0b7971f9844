# frozen_string_literal: true

require_relative 'test_helper'

# The gem's public methods beyond its README's examples: name and id, the
# factory, delete_all!(cluster) and delete_all_direct!, NonBlocking's
# delete_main_partition!, and blocks of delete_partitions! and delete_all!
# that run inside the MULTI with no redis-rb deprecation printed.
class ApiTest < CounterTest
  def clustered
    counter = RedisCounters::HashCounter.new(redis, counter_name: :hits, group_keys: [:page],
                                                    cluster_keys: [:site], partition_keys: [:day])
    [%w[a d1], %w[a d2], %w[b d1]].each { |site, day| counter.increment(site: site, day: day, page: 'home') }
    counter
  end

  def test_name_id_and_factory
    counter = RedisCounters.create_counter(redis, counter_class: RedisCounters::HashCounter,
                                                  counter_name: :pages, field_name: :hits)
    assert_instance_of RedisCounters::HashCounter, counter
    assert_equal :pages, counter.name
    assert_equal :pages, counter.id
    list = RedisCounters::UniqueValuesLists::Expirable.new(redis, counter_name: 'sessions', value_keys: [:sid])
    assert_equal 'sessions', list.id
  end

  def test_delete_all_takes_the_cluster_and_its_block_runs_in_the_multi
    counter = clustered
    err = assert_raises(ArgumentError) { counter.delete_all! }
    assert_equal 'You must specify a cluster', err.message
    queued = nil
    replies = nil
    _, stderr = capture_io do
      replies = counter.delete_all!(site: 'a') { queued = redis.set('cleared', 'a') }
    end
    assert_equal '', stderr
    assert_equal 'QUEUED', queued # the block's command was queued in the MULTI
    assert_equal [1, 1, 'OK'], replies
    assert_equal 'a', redis.get('cleared')
    assert_rows [], counter.partitions(site: 'a')
    assert_rows [{ day: 'd1' }], counter.partitions(site: 'b')
    plain = RedisCounters::HashCounter.new(redis, counter_name: :plain, group_keys: [:page], partition_keys: [:day])
    %w[d1 d2].each { |day| plain.increment(day: day, page: 'p') }
    assert_equal [1, 1], plain.delete_all!
  end

  def test_delete_partitions_block_runs_in_the_multi_without_deprecation
    counter = clustered
    replies = nil
    _, stderr = capture_io do
      replies = counter.delete_partitions!(site: 'a', day: 'd1') { redis.incr('deleted') }
    end
    assert_equal '', stderr
    assert_equal [1, 1], replies
    # a block that fails: nothing of the MULTI applies
    assert_raises(RuntimeError) { counter.delete_partitions!(site: 'a') { raise 'stop' } }
    assert_rows [{ day: 'd2' }], counter.partitions(site: 'a')
    assert_equal 'PONG', redis.ping # the connection is out of the MULTI
  end

  def test_delete_all_direct_on_a_connection_or_a_transaction
    counter = clustered
    assert_equal 2, counter.delete_all_direct!(site: 'a')
    assert_rows [], counter.partitions(site: 'a')
    redis.multi { |tx| counter.delete_all_direct!({ site: 'b' }, tx) }
    assert_rows [], counter.partitions(site: 'b')
    counter = clustered
    counter.delete_all_direct!({ site: 'a' }, redis, [{ day: 'd2' }])
    assert_rows [{ day: 'd1' }], counter.partitions(site: 'a')
  end

  def test_non_blocking_delete_main_partition
    list = RedisCounters::UniqueValuesLists::NonBlocking.new(redis, counter_name: :users, value_keys: [:user],
                                                                    cluster_keys: [:month], partition_keys: [:day])
    assert list.add(user: 1, month: 'm1', day: 'd1')
    assert list.add(user: 1, month: 'm2', day: 'd1')
    list.delete_main_partition!(month: 'm1')
    refute list.has_value?(user: 1, month: 'm1')
    assert list.has_value?(user: 1, month: 'm2')
    assert list.add(user: 1, month: 'm1', day: 'd2') # new again
  end
end
