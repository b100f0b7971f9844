// The package README's examples and the module README's Node.js example,
// each file replayed on an empty server (test/readme.js says how), with
// `require('redis-recipes')` this checkout's package.
'use strict';
const test = require('node:test');
const path = require('node:path');
const Module = require('node:module');
const servers = require('./servers');
const { replay } = require('./readme');

const READMES = [path.join(__dirname, '..', 'README.md'), path.join(__dirname, '..', '..', '..', 'README.md')];

for (const readme of READMES) {
  test(`${path.relative(path.join(__dirname, '..', '..', '..'), readme)} replays`, async () => {
    const server = await servers.start();
    try {
      const requireHere = Module.createRequire(path.join(__dirname, 'readme.js'));
      await replay(readme, server.url, (name) => requireHere(name === 'redis-recipes' ? '..' : name));
    } finally {
      server.stop();
    }
  });
}
