# frozen_string_literal: true

module RedisCounters
  # The module release this library speaks (the gem redis_counters numbers
  # its own releases otherwise).
  VERSION = '0.3.0'
end
