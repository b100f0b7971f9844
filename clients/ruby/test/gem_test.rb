# frozen_string_literal: true

require_relative 'test_helper'
require_relative 'readme'
require 'open3'
require 'rubygems/package'

# The library as Ruby installs it: its version is the module release
# (Cargo.toml's); the gem `gem build` makes from the gemspec, installed with
# `gem install --install-dir` into a fresh directory, and the library through
# a Bundler `path:` Gemfile, each replay the README in a process of its own
# (nothing of this checkout on its load path but the replay), and so does
# this checkout's lib/.
class GemTest < CounterTest
  HERE = File.expand_path('..', __dir__)
  README = File.join(HERE, 'README.md')
  REPLAY = File.join(__dir__, 'readme.rb')

  def module_version
    File.read(File.join(HERE, '../../Cargo.toml'))[/^version = "([^"]+)"/, 1]
  end

  def url
    "redis://127.0.0.1:#{TestServer.port}"
  end

  def test_version_is_the_module_release
    assert_equal module_version, RedisCounters::VERSION
    spec = Gem::Specification.load(File.join(HERE, 'redis_counters.gemspec'))
    assert_equal [module_version, 'BSD-3-Clause'], [spec.version.to_s, spec.license]
  end

  def test_readme_replays_on_this_checkout
    checked, wrong = Readme.replay(README, url)
    assert_empty wrong
    assert_operator checked, :>=, 10
  end

  # Runs ruby with `env`, from `dir`; the replay's own lines checked.
  def replay_in(env, dir, *ruby)
    script = <<~RUBY
      require 'redis_counters'
      loaded = $LOADED_FEATURES.grep(%r{/redis_counters\\.rb\\z})
      abort "loaded \#{loaded}" unless loaded.all? { |f| f.start_with?(ENV.fetch('EXPECTED_LIB')) }
      load #{REPLAY.inspect}
      checked, wrong = Readme.replay(#{README.inspect}, #{url.inspect})
      abort wrong.join("\\n") unless wrong.empty? && checked >= 10
      puts checked
    RUBY
    clean = { 'RUBYLIB' => nil, 'RUBYOPT' => nil, 'BUNDLE_GEMFILE' => nil }
    out, status = Open3.capture2e(clean.merge(env), *ruby, '-e', script, chdir: dir)
    assert status.success?, out
  end

  def test_the_built_gem_installs_and_replays_the_readme
    Dir.mktmpdir('recipes-gem-') do |dir|
      gem_file = File.join(dir, 'redis_counters.gem')
      out, status = Open3.capture2e('gem', 'build', 'redis_counters.gemspec', '--output', gem_file, chdir: HERE)
      assert status.success?, out
      files = Gem::Package.new(gem_file).contents
      assert_includes files, 'lib/redis_counters/base_counter.rb'
      assert_empty files.grep(/\Atest/)
      home = File.join(dir, 'gems')
      # its dependency, redis, is the system's (checked when the gem activates)
      out, status = Open3.capture2e('gem', 'install', '--local', '--no-document', '--ignore-dependencies',
                                    '--install-dir', home, gem_file)
      assert status.success?, out
      lib = File.join(home, 'gems', "redis_counters-#{module_version}", 'lib')
      replay_in({ 'GEM_HOME' => nil, 'GEM_PATH' => ([home] + Gem.path).join(':'), 'EXPECTED_LIB' => lib },
                dir, 'ruby', '-e', "gem 'redis_counters', '= #{module_version}'")
    end
  end

  def test_a_bundler_path_gemfile_uses_it
    Dir.mktmpdir('recipes-bundle-') do |dir|
      File.write(File.join(dir, 'Gemfile'), "gem 'redis_counters', path: #{HERE.inspect}\n")
      env = { 'BUNDLE_GEMFILE' => File.join(dir, 'Gemfile'), 'BUNDLE_APP_CONFIG' => File.join(dir, '.bundle') }
      out, status = Open3.capture2e(env, 'bundle', 'install', '--local', '--quiet', chdir: dir)
      assert status.success?, out
      replay_in(env.merge('EXPECTED_LIB' => File.join(HERE, 'lib')), dir, 'bundle', 'exec', 'ruby')
    end
  end
end
