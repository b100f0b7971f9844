# frozen_string_literal: true

# RedisCounters backed by the recipes module: the public API of the gem
# redis_counters (HashCounter, UniqueHashCounter, UniqueValuesLists::Blocking,
# NonBlocking, Expirable) on the module's HCOUNTER and ULIST commands.
#
#   require 'redis_counters'   # this file, instead of the gem
#
# Every counter is one key named counter_name, created on first write with the
# schema its options imply. See README.md for what differs from the gem.
require 'redis'

require_relative 'redis_counters/version'
require_relative 'redis_counters/row'
require_relative 'redis_counters/base_counter'
require_relative 'redis_counters/hash_counter'
require_relative 'redis_counters/unique_hash_counter'
require_relative 'redis_counters/unique_values_lists'

# The gem's factory, as a module function: RedisCounters.create_counter(redis, counter_class: ..., ...).
module RedisCounters
  def create_counter(redis, opts)
    BaseCounter.create(redis, opts)
  end

  module_function :create_counter
end
