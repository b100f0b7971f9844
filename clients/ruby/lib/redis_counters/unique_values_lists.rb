# frozen_string_literal: true

module RedisCounters
  # The gem's unique-value lists on ULIST: value keys are the VALUE names,
  # cluster keys the SCOPE (uniqueness holds within a cluster), partition keys
  # the PARTITION names. One class does all three: the module needs neither
  # Blocking's WATCH loop nor NonBlocking's second copy, and expires values
  # itself.
  module UniqueValuesLists
    class Base < BaseCounter
      alias add process
      alias << process
      alias increment process # as the gem README calls it

      # Whether the value (value and cluster keys of params) is in the list.
      def has_value?(params)
        redis.call('ULIST.HAS', counter_name, *pairs(value_keys + cluster_keys, params)) == 1
      end

      # Expired values are reclaimed by the server; nothing to do.
      def clean_expired(_cluster = {}); end

      protected

      def command(verb)
        "ULIST.#{verb}"
      end

      def value_keys
        @value_keys ||= wrap(options.fetch(:value_keys))
      end

      # true if the value was new; the block (given the connection) runs
      # after a new value was added.
      def process_value
        added = write('ULIST.ADD', counter_name, *expiry, *pairs(value_keys + cluster_keys + partition_keys, params)) == 1
        yield redis if added && block_given?
        added
      end

      def expiry
        expire = params.fetch(:expire) { params.fetch('expire', nil) }
        case expire
        when nil then []
        when Symbol, String then ['NEVER']
        else ['EXPIRE', expire.to_i]
        end
      end

      def create_args
        expire = options[:expire]
        ['ULIST.CREATE', counter_name,
         *names('VALUE', value_keys),
         *names('SCOPE', cluster_keys),
         *names('PARTITION', partition_keys.each_with_index.map { |key, i| partition_name(key, i) }),
         *(expire.nil? || expire.is_a?(Symbol) ? [] : ['EXPIRE', expire.to_i])]
      end

      def data_row(row)
        Row.from(value_keys.map { |key| [key, row[key]] })
      end
    end

    class Blocking < Base; end

    class NonBlocking < Base
      # The gem keeps every value of a cluster in a main partition for the
      # uniqueness check; here uniqueness lives with the values themselves, so
      # forgetting them deletes the cluster's partitions.
      def delete_main_partition!(cluster = {}, write_session = redis)
        delete_all_direct!(cluster, write_session)
      end
    end

    class Expirable < Base; end
  end
end
