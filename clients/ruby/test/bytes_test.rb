# frozen_string_literal: true

require_relative 'test_helper'

# Values and names of any bytes (here not UTF-8) come back as stored, in the
# HCOUNTER and ULIST families the gem's counters use, and rows find a name
# of any bytes.
class BytesTest < CounterTest
  BINARY = "\xFF\x00\xFE".b
  OTHER = "\x80:\x00".b
  NAME = "g\xFF".b # a group or value key that is not UTF-8

  def test_hash_counter_values_and_names
    counter = RedisCounters::HashCounter.new(redis, counter_name: :c, group_keys: [NAME, :page],
                                                    partition_keys: [:day])
    assert_equal 1, counter.increment(NAME => BINARY, page: OTHER, day: BINARY)
    assert_equal 3, counter.increment(NAME => BINARY, page: OTHER, day: BINARY, value: 2)
    (row,) = counter.data
    assert_equal [BINARY, OTHER, 3], [row[NAME].b, row[:page].b, row[:value]]
    assert_equal [BINARY], counter.partitions.map { |r| r[:day].b }
    assert_equal [1], counter.delete_partitions!(day: BINARY)
  end

  def test_unique_lists_and_unique_hash_counter
    list = RedisCounters::UniqueValuesLists::Blocking.new(redis, counter_name: :l, value_keys: [NAME, :v],
                                                                 cluster_keys: [:site], partition_keys: [:day])
    assert list.add(NAME => BINARY, v: OTHER, site: BINARY, day: OTHER)
    refute list.add(NAME => BINARY, v: OTHER, site: BINARY, day: BINARY)
    assert list.has_value?(NAME => BINARY, v: OTHER, site: BINARY)
    (row,) = list.data(site: BINARY)
    assert_equal [BINARY, OTHER], [row[NAME].b, row[:v].b]
    assert_equal [OTHER], list.partitions(site: BINARY).map { |r| r[:day].b }
    unique = RedisCounters::UniqueHashCounter.new(
      redis, counter_name: :u, group_keys: [:page], partition_keys: [:day],
             unique_list: { list_class: RedisCounters::UniqueValuesLists::Blocking, value_keys: [NAME] }
    )
    assert unique.increment(NAME => BINARY, page: OTHER, day: BINARY)
    refute unique.increment(NAME => BINARY, page: OTHER, day: BINARY)
    assert_equal [[OTHER, 1]], unique.data.map { |r| [r[:page].b, r[:value]] }
  end
end
