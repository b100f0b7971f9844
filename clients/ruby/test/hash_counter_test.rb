# frozen_string_literal: true

require_relative 'test_helper'

# The gem README's HashCounter examples, each giving the gem's rows, and the
# gem's method contracts.
class HashCounterTest < CounterTest
  def test_simple_counter
    counter = RedisCounters::HashCounter.new(redis, counter_name: :simple_counter, field_name: :pages)
    5.times { counter.increment }
    assert_rows [{}], counter.partitions
    assert_rows [{ value: 5 }], counter.data
  end

  def pages_by_day(partition_keys = [:date])
    counter = RedisCounters::HashCounter.new(redis, counter_name: :pages_by_day, group_keys: [:company_id],
                                                    partition_keys: partition_keys)
    2.times { counter.increment(company_id: 1, date: '2013-08-01') }
    3.times { counter.increment(company_id: 2, date: '2013-08-01') }
    1.times { counter.increment(company_id: 3, date: '2013-08-02') }
    counter
  end

  # A writer survives its key's loss (DEL, FLUSHDB, eviction): the write that
  # finds the key gone creates it again from the counter's options.
  def test_writers_survive_a_lost_key
    counter = RedisCounters::HashCounter.new(redis, counter_name: :lost, group_keys: [:city])
    counter.increment(city: 1)
    redis.del('lost')
    counter.increment(city: 1)
    assert_rows [{ city: '1', value: 1 }], counter.data
    redis.flushdb
    counter.increment(city: 2)
    assert_rows [{ city: '2', value: 1 }], counter.data
    begin
      redis.config(:set, 'maxmemory-policy', 'allkeys-random')
      redis.config(:set, 'maxmemory', '1')
      assert_raises(Redis::CommandError) { redis.set('trigger', 'x') }
    ensure
      redis.config(:set, 'maxmemory', '0')
      redis.config(:set, 'maxmemory-policy', 'noeviction')
    end
    assert_equal 0, redis.exists('lost')
    counter.increment(city: 3)
    assert_rows [{ city: '3', value: 1 }], counter.data
  end

  def test_pages_by_day
    counter = pages_by_day
    assert_rows [{ date: '2013-08-01' }, { date: '2013-08-02' }], counter.partitions
    assert_same_rows [{ company_id: '1', value: 2 }, { company_id: '2', value: 3 }, { company_id: '3', value: 1 }],
                     counter.data
    assert_equal [1], counter.delete_partitions!(date: '2013-08-01')
    assert_rows [{ date: '2013-08-02' }], counter.partitions
    assert_rows [{ company_id: '3', value: 1 }], counter.data
    assert_equal [1], counter.delete_all!
    assert_equal [], counter.data
  end

  def test_partition_given_by_a_proc
    counter = pages_by_day(proc { |params| params.fetch(:date) })
    assert_same_rows [{ company_id: '1', value: 2 }, { company_id: '2', value: 3 }, { company_id: '3', value: 1 }],
                     counter.data
    assert_equal 2, counter.partitions.size
  end

  def pages_by_day_city
    counter = RedisCounters::HashCounter.new(redis, counter_name: :pages_by_day_city,
                                                    group_keys: %i[company_id city_id],
                                                    partition_keys: %i[date company_id])
    2.times { counter.increment(date: '2013-08-01', company_id: 1, city_id: 11) }
    1.times { counter.increment(date: '2013-08-01', company_id: 1, city_id: 12) }
    4.times { counter.increment(date: '2013-08-01', company_id: 2, city_id: 10) }
    3.times { counter.increment(date: '2013-08-02', company_id: 1, city_id: 15) }
    counter
  end

  def test_pages_by_day_city
    counter = pages_by_day_city
    assert_same_rows [{ date: '2013-08-02', company_id: '1' },
                      { date: '2013-08-01', company_id: '1' },
                      { date: '2013-08-01', company_id: '2' }], counter.partitions
    assert_same_rows [{ date: '2013-08-01', company_id: '1' }, { date: '2013-08-01', company_id: '2' }],
                     counter.partitions(date: '2013-08-01')
    assert_same_rows [{ company_id: '1', city_id: '15', value: 3 },
                      { company_id: '1', city_id: '11', value: 2 },
                      { company_id: '1', city_id: '12', value: 1 },
                      { company_id: '2', city_id: '10', value: 4 }], counter.data
    august_first = [{ company_id: '1', city_id: '11', value: 2 },
                    { company_id: '1', city_id: '12', value: 1 },
                    { company_id: '2', city_id: '10', value: 4 }]
    assert_same_rows august_first, counter.data(date: '2013-08-01')
    batches = []
    assert_equal 3, counter.data(date: '2013-08-01') { |batch| batches << batch }
    assert_equal 2, batches.size # one batch per partition
    assert_same_rows august_first, batches.flatten
  end

  def test_increment_returns_the_count_and_float_mode_counts_floats
    counter = RedisCounters::HashCounter.new(redis, counter_name: :c, group_keys: [:id])
    assert_equal 1, counter.increment(id: 1)
    assert_equal 4, counter.increment(id: 1, value: 3)
    assert_raises(ArgumentError) { counter.increment(id: 1, value: 0.5) }
    revenue = RedisCounters::HashCounter.new(redis, counter_name: :revenue, group_keys: [:id],
                                                    partition_keys: [:day], float_mode: true)
    assert_equal 10.5, revenue.increment(id: 1, day: 'd', value: 10.5)
    assert_equal 10.6, revenue.increment(id: 1, day: 'd', value: 0.1)
    assert_rows [{ id: '1', value: 10.6 }], revenue.data
    assert_kind_of Float, revenue.data.first[:value]
  end

  def test_cluster_keys_lead_the_partition
    counter = RedisCounters::HashCounter.new(redis, counter_name: :c, group_keys: [:id],
                                                    cluster_keys: [:company], partition_keys: [:day])
    counter.increment(company: 1, day: 'd1', id: 'a')
    counter.increment(company: 1, day: 'd2', id: 'a')
    counter.increment(company: 2, day: 'd1', id: 'b')
    assert_rows [{ day: 'd1' }, { day: 'd2' }], counter.partitions(company: 1)
    assert_rows [{ id: 'b', value: 1 }], counter.data(company: 2)
    err = assert_raises(ArgumentError) { counter.partitions }
    assert_equal 'You must specify a cluster', err.message
    assert_raises(KeyError) { counter.data(day: 'd1') } # a cluster key missing
    assert_equal [1, 1], counter.delete_partitions!(company: 1)
    assert_rows [], counter.partitions(company: 1)
    assert_rows [{ day: 'd1' }], counter.partitions(company: 2)
  end

  def test_contracts
    counter = pages_by_day_city
    assert_raises(ArgumentError) { counter.partitions(company_id: 1) } # not a leading partition key
    assert_raises(KeyError) { counter.increment(date: 'd', company_id: 1) } # city_id missing
    assert_raises(KeyError) { RedisCounters::HashCounter.new(redis, {}) }
    assert_raises(KeyError) { RedisCounters::HashCounter.new(redis, counter_name: :x).increment }
    made = RedisCounters::BaseCounter.create(redis, counter_class: 'RedisCounters::HashCounter',
                                                    counter_name: :made, field_name: :hits)
    assert_instance_of RedisCounters::HashCounter, made
    assert_equal 1, made.process
    counter.delete_partition_direct!(date: '2013-08-01', company_id: 2)
    assert_equal 2, counter.partitions.size
  end

  def test_values_with_the_delimiter_stay_whole
    counter = RedisCounters::HashCounter.new(redis, counter_name: :c, group_keys: %i[a b], partition_keys: [:p])
    counter.increment(a: 'x:y', b: "z\x00", p: '1:2')
    assert_rows [{ a: 'x:y', b: "z\x00", value: 1 }], counter.data
    assert_rows [{ p: '1:2' }], counter.partitions
  end

  def test_one_module_key_made_on_first_write
    pages_by_day
    assert_equal ['pages_by_day'], redis.keys('*')
    refute_equal 'hash', redis.type('pages_by_day')
  end
end
