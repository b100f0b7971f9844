// The package README's examples and the module README's Node.js example,
// each file replayed on an empty server: each ```js block runs in order, and
// what each `console.log` prints must be what its `// →` comment (on its
// line or the next) shows.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const util = require('node:util');
const Module = require('node:module');
const servers = require('./servers');

const READMES = [path.join(__dirname, '..', 'README.md'), path.join(__dirname, '..', '..', '..', 'README.md')];

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

for (const readme of READMES) {
  test(`${path.relative(path.join(__dirname, '..', '..', '..'), readme)} replays`, async () => {
    const server = await servers.start();
    try {
      const url = server.url;
      const printed = [];
      const log = (...values) => printed.push(values.map((v) => util.inspect(v, { breakLength: Infinity })).join(' '));
      // `require('redis-recipes')` in the examples is this package.
      const requireHere = Module.createRequire(path.join(__dirname, 'readme.js'));
      const load = (name) => requireHere(name === 'redis-recipes' ? '..' : name);
      let expected = [];
      for (const block of blocks(fs.readFileSync(readme, 'utf8'))) {
        expected = expected.concat(shown(block));
        const body = block.replace(/console\.log\(/g, 'log(');
        const run = new Function('require', 'log', 'url', `return (async () => {\n${body}\n})();`);
        await run(load, log, url);
      }
      assert.ok(expected.length >= 2, `${expected.length} outputs shown`);
      assert.deepEqual(printed, expected);
    } finally {
      server.stop();
    }
  });
}
