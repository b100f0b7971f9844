// Replays a README on an empty server: each ```js block runs in order, and
// what each `console.log` prints must be what its `// →` comment (on its
// line or the next) shows. `load` is the examples' `require`.
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const util = require('node:util');

/** The ```js blocks of a file, without the indentation of their fence. */
function blocks(text) {
  return [...text.matchAll(/^( *)```js\n([\s\S]*?)^ *```/gm)].map(([, indent, body]) =>
    body.split('\n').map((line) => line.slice(indent.length)).join('\n'),
  );
}

/** The shown outputs of a block, in order. */
function shown(block) {
  const lines = block.split('\n');
  const out = [];
  lines.forEach((line, i) => {
    if (!line.includes('console.log(')) return;
    const own = line.match(/\/\/ → (.*)$/);
    const next = (lines[i + 1] || '').match(/^\s*\/\/ → (.*)$/);
    out.push((own || next)[1].trim());
  });
  return out;
}

async function replay(readme, url, load) {
  const printed = [];
  const log = (...values) => printed.push(values.map((v) => util.inspect(v, { breakLength: Infinity })).join(' '));
  let expected = [];
  for (const block of blocks(fs.readFileSync(readme, 'utf8'))) {
    expected = expected.concat(shown(block));
    const body = block.replace(/console\.log\(/g, 'log(');
    const run = new Function('require', 'log', 'url', `return (async () => {\n${body}\n})();`);
    await run(load, log, url);
  }
  assert.ok(expected.length >= 2, `${expected.length} outputs shown`);
  assert.deepEqual(printed, expected);
}

module.exports = { replay };
