# frozen_string_literal: true

# A real redis-server with the module loaded, on a free loopback port, for the
# whole run: it must answer PING as the process we started before a startup
# deadline, and is stopped by its pid at exit. Env: RECIPES_MODULE (the .so,
# set by the Makefile), REDIS_SERVER (default redis-server).
require 'minitest/autorun'
require 'socket'
require 'tmpdir'
require 'fileutils'

$LOAD_PATH.unshift File.expand_path('../lib', __dir__)
require 'redis_counters'

module TestServer
  STARTUP_DEADLINE = 15
  STOP_DEADLINE = 10

  class << self
    attr_reader :port

    def start
      so = ENV.fetch('RECIPES_MODULE') { abort 'set RECIPES_MODULE to the module .so (make test-clients does)' }
      abort "RECIPES_MODULE=#{so} does not exist: run cargo build --release" unless File.file?(so)
      @dir = Dir.mktmpdir('recipes-rb-')
      5.times do
        @port = TCPServer.open('127.0.0.1', 0) { |s| s.addr[1] }
        @pid = Process.spawn(ENV.fetch('REDIS_SERVER', 'redis-server'),
                             '--port', @port.to_s, '--bind', '127.0.0.1', '--dir', @dir,
                             '--logfile', 'redis.log', '--save', '', '--loadmodule', so,
                             chdir: @dir, in: File::NULL, out: File::NULL, err: File::NULL)
        return if ready?

        stop_process
      end
      abort "redis-server did not start:\n#{log}"
    end

    def log
      File.read(File.join(@dir, 'redis.log'))
    rescue SystemCallError
      ''
    end

    def ready?
      deadline = Time.now + STARTUP_DEADLINE
      while Time.now < deadline
        if Process.waitpid(@pid, Process::WNOHANG) # it exited: the port was taken
          @pid = nil
          return false
        end
        begin
          r = Redis.new(host: '127.0.0.1', port: @port, timeout: 2)
          pid = r.info('server')['process_id'].to_i
          r.close
          return pid == @pid # else another server owns the port
        rescue Redis::BaseConnectionError
          sleep 0.02
        end
      end
      false
    end

    def stop_process
      return unless @pid

      Process.kill('TERM', @pid)
      deadline = Time.now + STOP_DEADLINE
      sleep 0.01 until Process.waitpid(@pid, Process::WNOHANG) || Time.now > deadline
      Process.kill('KILL', @pid) && Process.wait(@pid) if Time.now > deadline
      @pid = nil
    rescue Errno::ESRCH, Errno::ECHILD
      @pid = nil
    end

    def stop
      stop_process
      FileUtils.rm_rf(@dir) if @dir
    end
  end
end

TestServer.start
Minitest.after_run { TestServer.stop }

class CounterTest < Minitest::Test
  def redis
    @redis ||= Redis.new(host: '127.0.0.1', port: TestServer.port, timeout: 10)
  end

  def setup
    redis.flushall
  end

  def teardown
    @redis&.close
  end

  # actual rows against the gem's rows (symbol keys): each row equal, in order
  def assert_rows(expected, actual)
    assert actual == expected, "expected #{expected.inspect}\n     got #{actual.inspect}"
  end

  # the same rows in any order (the gem lists partitions in KEYS order)
  def assert_same_rows(expected, actual)
    key = ->(row) { row.map { |k, v| [k.to_s, v.to_s] }.sort }
    assert_rows expected.sort_by(&key), actual.sort_by(&key)
  end
end
