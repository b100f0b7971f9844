# frozen_string_literal: true

module RedisCounters
  # A row of data or partitions: a Hash with string keys that answers symbol
  # keys too, as the gem's HashWithIndifferentAccess rows do (the few lines of
  # ActiveSupport this needs, without ActiveSupport).
  #
  # A name is looked up by its bytes: a name that is not ASCII is kept as
  # binary, so a name of any bytes (from the server, or from options in any
  # encoding) finds its value.
  class Row < Hash
    def self.from(pairs)
      pairs.each_with_object(new) { |(name, value), row| row.store(key(name), value) }
    end

    def self.key(name)
      name = name.to_s
      name.ascii_only? ? name : name.b
    end

    def [](key)
      super(Row.key(key))
    end

    def fetch(key, *default, &block)
      super(Row.key(key), *default, &block)
    end

    def key?(key)
      super(Row.key(key))
    end
    alias has_key? key?
    alias include? key?

    def values_at(*keys)
      super(*keys.map { |key| Row.key(key) })
    end

    def delete(key, &block)
      super(Row.key(key), &block)
    end

    def ==(other)
      return false unless other.is_a?(Hash)

      super(other.each_with_object({}) { |(key, value), h| h[Row.key(key)] = value })
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
