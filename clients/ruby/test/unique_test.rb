# frozen_string_literal: true

require_relative 'test_helper'

# The gem README's unique-list and UniqueHashCounter examples, each giving the
# gem's rows, and the gem's method contracts.
class UniqueTest < CounterTest
  LISTS = [RedisCounters::UniqueValuesLists::Blocking, RedisCounters::UniqueValuesLists::NonBlocking,
           RedisCounters::UniqueValuesLists::Expirable].freeze

  # the gem README's events for company_users_by_month: [times, params]
  COMPANY_USERS = [
    [2, { company_id: 1, user_id: 11, date: '2013-08-10', start_month_date: '2013-08-01' }],
    [3, { company_id: 1, user_id: 22, date: '2013-08-10', start_month_date: '2013-08-01' }],
    [3, { company_id: 1, user_id: 22, date: '2013-09-05', start_month_date: '2013-09-01' }],
    [3, { company_id: 2, user_id: 11, date: '2013-08-10', start_month_date: '2013-08-01' }],
    [1, { company_id: 2, user_id: 22, date: '2013-08-11', start_month_date: '2013-08-01' }]
  ].freeze

  # each event as often as the README does, with what each call answered
  def replay(events, &call)
    events.flat_map { |times, params| Array.new(times) { call.call(params) } }
  end

  def test_simple_list_of_users
    LISTS.each do |list_class|
      redis.flushall
      counter = list_class.new(redis, counter_name: :users, value_keys: [:user_id])
      assert_equal [true, true, false],
                   [counter.increment(user_id: 1), counter.increment(user_id: 2), counter.increment(user_id: 1)]
      assert_same_rows [{ user_id: '1' }, { user_id: '2' }], counter.data
      assert_rows [{}], counter.partitions
    end
  end

  def company_users_by_month(list_class = RedisCounters::UniqueValuesLists::Blocking)
    counter = list_class.new(redis, counter_name: :company_users_by_month, value_keys: %i[company_id user_id],
                                    cluster_keys: [:start_month_date], partition_keys: [:date])
    [counter, replay(COMPANY_USERS) { |event| counter.add(event) }]
  end

  def test_company_users_by_month
    LISTS.each do |list_class|
      redis.flushall
      counter, added = company_users_by_month(list_class)
      assert_equal [true, false, true, false, false, true, false, false, true, false, false, true], added
      august = { start_month_date: '2013-08-01' }
      assert_rows [{ date: '2013-08-10' }, { date: '2013-08-11' }], counter.partitions(august)
      assert_rows [{ date: '2013-09-05' }], counter.partitions(start_month_date: '2013-09-01')
      assert_same_rows [{ company_id: '1', user_id: '11' }, { company_id: '1', user_id: '22' },
                        { company_id: '2', user_id: '11' }],
                       counter.data(august.merge(date: '2013-08-10'))
      assert_rows [{ company_id: '2', user_id: '22' }], counter.data(august.merge(date: '2013-08-11'))
      assert_rows [{ company_id: '1', user_id: '22' }], counter.data(start_month_date: '2013-09-01')
      assert_equal 4, counter.data(august) { |batch| assert_includes [1, 3], batch.size }
    end
  end

  def test_has_value_and_deletes
    counter, = company_users_by_month
    assert counter.has_value?(company_id: 1, user_id: 11, start_month_date: '2013-08-01', date: 'any')
    refute counter.has_value?(company_id: 1, user_id: 11, start_month_date: '2013-09-01')
    assert_equal [1], counter.delete_partitions!(start_month_date: '2013-08-01', date: '2013-08-10')
    refute counter.has_value?(company_id: 1, user_id: 11, start_month_date: '2013-08-01')
    # deleted values are new again
    assert counter.add(company_id: 1, user_id: 11, date: '2013-08-12', start_month_date: '2013-08-01')
    assert_raises(ArgumentError) { counter.partitions }
    assert_raises(ArgumentError) { counter.delete_all! } # the gem's: a clustered list needs its cluster
    assert_equal [1, 1], counter.delete_all!(start_month_date: '2013-08-01')
    assert_equal [], counter.data(start_month_date: '2013-08-01')
    assert_rows [{ date: '2013-09-05' }], counter.partitions(start_month_date: '2013-09-01')
  end

  def test_add_runs_its_block_only_for_a_new_value
    counter = RedisCounters::UniqueValuesLists::Blocking.new(redis, counter_name: :l, value_keys: [:id])
    seen = []
    counter.add(id: 1) { |connection| seen << connection }
    counter.add(id: 1) { |connection| seen << connection }
    assert_equal [redis], seen
  end

  def test_expirable_sessions
    counter = RedisCounters::UniqueValuesLists::Expirable.new(redis, counter_name: :sessions,
                                                                     value_keys: [:session_id], expire: 1)
    counter << { session_id: 1 }
    counter << { session_id: 2 }
    counter << { session_id: 3, expire: :never }
    counter << { session_id: 4, expire: 3600 }
    assert_same_rows [{ session_id: '1' }, { session_id: '2' }, { session_id: '3' }, { session_id: '4' }],
                     counter.data
    # the server's clock passes the default expiry: 1 and 2 go, 3 and 4 stay
    deadline = Time.now + 10
    sleep 0.05 until counter.data.size == 2 || Time.now > deadline
    assert_same_rows [{ session_id: '3' }, { session_id: '4' }], counter.data
    refute counter.has_value?(session_id: 1)
    assert counter.has_value?(session_id: 3)
    counter.clean_expired
  end

  def test_unique_hash_counter
    counter = RedisCounters::UniqueHashCounter.new(
      redis,
      counter_name: :company_users_by_month, group_keys: [:company_id], partition_keys: [:date],
      unique_list: { list_class: RedisCounters::UniqueValuesLists::Blocking, value_keys: %i[company_id user_id],
                     cluster_keys: [:start_month_date], partition_keys: [:date] }
    )
    counted = replay(COMPANY_USERS) { |event| counter.increment(event) }
    assert_equal [true, false, true, false, false, true, false, false, true, false, false, true], counted
    assert_rows [{ date: '2013-08-10' }, { date: '2013-08-11' }, { date: '2013-09-05' }], counter.partitions
    assert_same_rows [{ company_id: '1', value: 2 }, { company_id: '2', value: 1 }],
                     counter.data(date: '2013-08-10')
    assert_rows [{ company_id: '2', value: 1 }], counter.data(date: '2013-08-11')
    assert_rows [{ company_id: '1', value: 1 }], counter.data(date: '2013-09-05')
    assert_equal ['company_users_by_month'], redis.keys('*') # no list keys beside it
    # forgetting a partition forgets its unique values
    counter.delete_partitions!(date: '2013-08-10')
    assert counter.increment(company_id: 1, user_id: 11, date: '2013-08-12', start_month_date: '2013-08-01')
  end
end
