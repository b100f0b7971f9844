# frozen_string_literal: true

require_relative 'lib/redis_counters/version'

Gem::Specification.new do |spec|
  spec.name = 'redis_counters'
  spec.version = RedisCounters::VERSION
  spec.summary = "The gem redis_counters' API on the recipes Redis module (HCOUNTER, ULIST)"
  spec.description = 'A drop-in for the gem redis_counters: HashCounter, UniqueHashCounter and ' \
                     'UniqueValuesLists on the recipes module, atomic, without KEYS or WATCH loops.'
  spec.authors = ['recipes developers']
  spec.license = 'BSD-3-Clause'
  # The project's public address is not settled yet: example.invalid (a name
  # that never resolves) stands for it, as in the Python and Node packages.
  spec.homepage = 'https://example.invalid/recipes/tree/main/clients/ruby'
  spec.required_ruby_version = '>= 2.7'
  spec.files = Dir.chdir(__dir__) { Dir['lib/**/*.rb'] + ['README.md'] }
  spec.require_paths = ['lib']
  spec.add_runtime_dependency 'redis', '>= 4.0'
end
