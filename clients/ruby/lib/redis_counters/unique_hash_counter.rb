# frozen_string_literal: true

module RedisCounters
  # The gem's UniqueHashCounter on one unique HCOUNTER: the unique list's
  # value keys are its UNIQUE names and its cluster keys its SCOPE, so the
  # check and the increment are one atomic step (no list key, no WATCH loop).
  # A value is remembered in the counter partition where it was counted.
  class UniqueHashCounter < HashCounter
    protected

    def unique_list
      options.fetch(:unique_list)
    end

    # true if the event was new (and counted), as the gem answers; the block,
    # if any, runs after a new one.
    def process_value
      before, after = recreating_key do
        redis.multi do |tx|
          tx.call('HCOUNTER.GET', counter_name, *write_pairs)
          tx.call(*increment_args)
        end
      end
      counted = before != after
      yield redis if counted && block_given?
      counted
    end

    def increment_args
      unique_names = (wrap(unique_list.fetch(:value_keys)) + wrap(unique_list.fetch(:cluster_keys, []))).map(&:to_s)
      counted = write_pairs.each_slice(2).map(&:first)
      extra = unique_names.uniq.reject { |name| counted.include?(name) }
      super + extra.flat_map { |name| [name, fetch_param(params, name).to_s] }
    end

    def create_args
      super + names('UNIQUE', wrap(unique_list.fetch(:value_keys))) +
        names('SCOPE', wrap(unique_list.fetch(:cluster_keys, [])))
    end
  end
end
