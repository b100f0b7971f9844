# frozen_string_literal: true

module RedisCounters
  # What every counter shares: the gem's options and its cluster/partition
  # rules, on one module key (counter_name) created on first write.
  #
  # The gem's cluster keys become the leading partition names of the key (for
  # the unique lists, its SCOPE, where uniqueness lives); its partition keys the
  # partition names after them. Names and values travel as separate arguments,
  # so key_delimiter and value_delimiter are accepted and not needed.
  class BaseCounter
    KEY_DELIMITER = ':'
    VALUE_DELIMITER = ':'

    attr_reader :redis, :options, :params

    # The gem's factory: options[:counter_class] names the class.
    def self.create(redis, opts)
      Object.const_get(opts.fetch(:counter_class).to_s).new(redis, opts)
    end

    def initialize(redis, opts)
      @redis = redis
      @options = opts
      counter_name
    end

    # Counts (or adds) the event that params describe.
    def process(params = {}, &block)
      @params = params
      process_value(&block)
    end

    # The partitions of a cluster (all of them without cluster keys), as rows
    # of the partition keys; params may name leading partition keys.
    def partitions(params = {})
      filter = prepared_filter(params)
      module_rows(:PARTITIONS, filter).map { |row| partition_row(row) }
    end

    # The rows of the matching partitions; with a block, yields each
    # partition's rows and returns how many rows there were.
    def data(params = {})
      rows = module_rows(:DATA, prepared_filter(params))
      return rows.map { |row| data_row(row) } unless block_given?

      rows.chunk { |row| row.values_at(*partition_names) }.sum do |_, batch|
        yield batch.map { |row| data_row(row) }
        batch.size
      end
    end

    # The counter's name, as the options give it (the gem's id too).
    def name
      options[:counter_name]
    end
    alias id name

    # Deletes the matching partitions; a block runs in the same MULTI (its
    # commands on the counter's connection are queued in it). Returns the
    # MULTI's replies, as the gem's: one 1 per partition deleted, then the
    # block's.
    def delete_partitions!(params = {}, &block)
      filter = prepared_filter(params)
      transaction(block) { redis.call(command(:DEL), counter_name, *filter) }
    end

    # Deletes every partition of a cluster (of the whole counter without
    # cluster keys); a block runs in the same MULTI. Returns as
    # delete_partitions! does.
    def delete_all!(cluster = {}, &block)
      filter = prepared_filter(cluster).first(cluster_keys.size * 2)
      transaction(block) { redis.call(command(:DEL), counter_name, *filter) }
    end

    # Deletes every partition of a cluster, or the partitions `parts` names
    # (rows of #partitions), on write_session (a connection, or the
    # transaction of a redis.multi block), outside any MULTI of its own.
    def delete_all_direct!(cluster, write_session = redis, parts = nil)
      return write_session.call(command(:DEL), counter_name, *prepared_filter(cluster).first(cluster_keys.size * 2)) unless parts

      parts.each { |partition| delete_partition_direct!(cluster.merge(partition), write_session) }
    end

    # Deletes one leaf partition (all partition keys given).
    def delete_partition_direct!(params = {}, write_session = redis)
      partition_keys.each { |key| fetch_param(params, key) }
      write_session.call(command(:DEL), counter_name, *prepared_filter(params))
    end

    protected

    def counter_name
      @counter_name ||= options.fetch(:counter_name).to_s
    end

    def cluster_keys
      @cluster_keys ||= wrap(options.fetch(:cluster_keys, []))
    end

    def partition_keys
      @partition_keys ||= wrap(options.fetch(:partition_keys, []))
    end

    # A name per partition key: its own, or one made up for a proc (whose
    # value is computed from the params, as the gem does).
    def partition_name(key, index = partition_keys.index(key))
      key.respond_to?(:call) ? "partition_#{index}" : key.to_s
    end

    def partition_names
      @partition_names ||= cluster_keys.map(&:to_s) + partition_keys.each_with_index.map { |k, i| partition_name(k, i) }
    end

    def wrap(keys)
      keys.is_a?(Array) ? keys : [keys]
    end

    def fetch_param(params, key)
      return key.call(params) if key.respond_to?(:call)

      params.fetch(key) { params.fetch(key.to_s) { params.fetch(key.to_sym) } }
    end

    def param?(params, key)
      !key.respond_to?(:call) && (params.key?(key.to_s) || params.key?(key.to_sym))
    end

    # name value ... of the keys, in order
    def pairs(keys, params)
      keys.flat_map { |key| [partition_name(key), fetch_param(params, key).to_s] }
    end

    # The gem's filter rules: with cluster keys the whole cluster must be given
    # ('You must specify a cluster'); partition keys only as a leading run.
    def prepared_filter(params)
      raise ArgumentError, 'You must specify a cluster' if cluster_keys.any? && params.empty?

      cluster = cluster_keys.map { |key| fetch_param(params, key) }
      given = partition_keys.take_while { |key| param?(params, key) }
      if partition_keys.drop(given.size).any? { |key| param?(params, key) }
        raise ArgumentError, format('An incorrectly specified partition %s', params)
      end

      cluster_keys.map(&:to_s).zip(cluster.map(&:to_s)).flatten + pairs(given, params)
    end

    def module_rows(verb, filter)
      redis.call(command(verb), counter_name, *filter).map do |reply|
        Row.from(reply.is_a?(Hash) ? reply : reply.each_slice(2)) # RESP3 maps, RESP2 arrays
      end
    end

    def partition_row(row)
      Row.from(partition_keys.each_with_index.map { |key, i| [key, row[partition_name(key, i)]] })
    end

    # A MULTI around the DEL the given block sends and the caller's block, so
    # that the caller's commands on this connection (redis.set ..., as the
    # gem's blocks write them) are queued in it too, on redis-rb 4 (without
    # its deprecation of such calls) and 5 alike. The DEL's count becomes the
    # gem's one 1 per partition. The connection is held (redis-rb's own
    # lock, private in 4 and 5) from MULTI to EXEC, so no other thread's
    # command lands in between.
    def transaction(block)
      redis.send(:synchronize) do
        redis.call('MULTI')
        begin
          yield
          block&.call
        rescue StandardError
          redis.call('DISCARD')
          raise
        end
        deleted, *others = redis.call('EXEC')
        raise deleted if deleted.is_a?(StandardError)

        Array.new(deleted, 1) + others
      end
    end

    # Runs a write; when the server answers that the key is gone (never
    # created, or deleted, evicted, flushed), creates it with the schema the
    # options imply and runs the write once more.
    def recreating_key
      yield
    rescue Redis::CommandError => e
      raise unless e.message.start_with?('ERR no such')

      create_key
      yield
    end

    def write(*args)
      recreating_key { redis.call(*args) }
    end

    def create_key
      redis.call(*create_args)
    rescue Redis::CommandError => e
      raise unless e.message.include?('exists') # another client created it first
    end

    def names(word, keys)
      keys.empty? ? [] : [word, *keys.map(&:to_s)]
    end
  end
end
