# frozen_string_literal: true

module RedisCounters
  # The gem's HashCounter on HCOUNTER: cluster and partition keys are the
  # counter's PARTITION names, group keys (or one field_name) its cells.
  class HashCounter < BaseCounter
    alias increment process

    protected

    def command(verb)
      "HCOUNTER.#{verb}"
    end

    def group_keys
      @group_keys ||= wrap(options.fetch(:group_keys, []))
    end

    def float_mode?
      options.fetch(:float_mode, false)
    end

    # The cell's new count, formatted as data formats it.
    def process_value
      format_value(write(*increment_args))
    end

    def increment_args
      ['HCOUNTER.INCRBY', counter_name, increment_by, *write_pairs]
    end

    def increment_by
      by = params.fetch(:value) { params.fetch('value', 1) }
      return by if float_mode? || by.is_a?(Integer)
      return by.to_i if by.is_a?(Float) && by == by.to_i

      raise ArgumentError, "value #{by.inspect}: an integer counter adds integers (float_mode: true adds floats)"
    end

    # every partition and group name once, with its value
    def write_pairs
      keys = cluster_keys + partition_keys + group_keys
      keys.uniq { |key| partition_name(key) }.flat_map { |key| [partition_name(key), fetch_param(params, key).to_s] }
    end

    def create_args
      options.fetch(:field_name) if group_keys.empty? # the gem requires one or the other
      ['HCOUNTER.CREATE', counter_name,
       *names('PARTITION', partition_names),
       *names('GROUP', group_keys),
       *(float_mode? ? ['FLOAT'] : [])]
    end

    def data_row(row)
      Row.from([['value', format_value(row['value'])]] + group_keys.map { |key| [key, row[key]] })
    end

    def format_value(value)
      float_mode? ? value.to_f : value.to_i
    end
  end
end
