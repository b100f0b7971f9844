# frozen_string_literal: true

module RedisCounters
  # A row of data or partitions: a Hash with string keys that answers symbol
  # keys too, as the gem's HashWithIndifferentAccess rows do (the few lines of
  # ActiveSupport this needs, without ActiveSupport).
  class Row < Hash
    def self.from(pairs)
      pairs.each_with_object(new) { |(name, value), row| row.store(name.to_s, value) }
    end

    def [](key)
      super(key.to_s)
    end

    def fetch(key, *default, &block)
      super(key.to_s, *default, &block)
    end

    def key?(key)
      super(key.to_s)
    end
    alias has_key? key?
    alias include? key?

    def values_at(*keys)
      super(*keys.map(&:to_s))
    end

    def delete(key, &block)
      super(key.to_s, &block)
    end

    def ==(other)
      return false unless other.is_a?(Hash)

      super(other.each_with_object({}) { |(key, value), h| h[key.to_s] = value })
    end
    alias eql? ==

    def hash
      to_a.sort_by { |key, _| key }.hash
    end

    def with_indifferent_access
      self
    end
  end
end
