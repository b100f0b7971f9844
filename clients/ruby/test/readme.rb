# frozen_string_literal: true

# Replays the ```ruby blocks of a README in order, in one binding where `url`
# is a server's address: each line `code # => shown` must give a value whose
# inspect is what the comment shows. Used by the suite (this checkout's
# lib/) and by the installed gem's test (in a process of its own).
module Readme
  SHOWN = /\A(?<code>.*?)\s+# => (?<shown>.*)\z/.freeze

  def self.blocks(text)
    text.scan(/^```ruby\n(.*?)^```/m).map(&:first)
  end

  # [lines checked, mismatches as strings]
  def self.replay(path, url)
    checked = 0
    wrong = []
    scope = binding
    scope.local_variable_set(:url, url)
    check = lambda do |got, shown, line|
      checked += 1
      wrong << "line #{line}: #{got.inspect}, the README shows #{shown}" unless got.inspect == shown
    end
    scope.local_variable_set(:__check, check)
    blocks(File.read(path)).each do |block|
      code = block.lines.map.with_index do |line, i|
        found = SHOWN.match(line.chomp)
        found ? "__check.call((#{found[:code]}), #{found[:shown].inspect}, #{i + 1})\n" : line
      end.join
      eval(code, scope, path) # rubocop:disable Security/Eval
    end
    [checked, wrong]
  end
end
