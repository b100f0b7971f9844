// The package as npm installs it: its version is the module's release
// (Cargo.toml's); `npm pack` of a clean copy of this tree (its files as git
// lists them, no node_modules, no dist) ships the code its `prepare` script
// builds, and installed from that tarball into a fresh npm project beside
// redis and ioredis (the versions of the lockfile) its README replays there
// against a real server.
'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const Module = require('node:module');
const servers = require('./servers');
const { replay } = require('./readme');

const PACKAGE = path.join(__dirname, '..');
const ROOT = path.join(PACKAGE, '..', '..');
const manifest = require('../package.json');

function moduleVersion() {
  return fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8').match(/^version = "([^"]+)"/m)[1];
}

test('the version is the module release', () => {
  assert.equal(manifest.version, moduleVersion());
  assert.equal(require('../package-lock.json').version, moduleVersion());
});

const npm = (cwd, ...args) =>
  execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, encoding: 'utf8' });

test('npm pack of a clean copy installs into a fresh project and replays the README', async () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'recipes-npm-'));
  const server = await servers.start();
  try {
    const copy = path.join(work, 'source');
    const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '.'], {
      cwd: PACKAGE,
      encoding: 'utf8',
    });
    for (const file of files.split('\n').filter((f) => f && fs.existsSync(path.join(PACKAGE, f)))) {
      fs.mkdirSync(path.dirname(path.join(copy, file)), { recursive: true });
      fs.copyFileSync(path.join(PACKAGE, file), path.join(copy, file));
    }
    assert.ok(!fs.existsSync(path.join(copy, 'dist')), 'dist/ is built, not tracked');
    npm(copy, 'ci');
    const tarball = path.join(work, JSON.parse(npm(copy, 'pack', '--json', '--pack-destination', work))[0].filename);
    const shipped = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n');
    for (const file of ['package/dist/index.js', 'package/dist/index.d.ts', 'package/dist/sharded.js', 'package/README.md']) {
      assert.ok(shipped.includes(file), `${file} in ${shipped.join(' ')}`);
    }
    assert.deepEqual(shipped.filter((f) => f.startsWith('package/src/') || f.startsWith('package/test/')), []);
    const app = path.join(work, 'app');
    fs.mkdirSync(app);
    npm(app, 'init', '-y');
    const lock = require('../package-lock.json').packages;
    const pinned = ['redis', 'ioredis'].map((name) => `${name}@${lock[`node_modules/${name}`].version}`);
    npm(app, 'install', tarball, ...pinned);
    const installed = JSON.parse(fs.readFileSync(path.join(app, 'node_modules/redis-recipes/package.json'), 'utf8'));
    assert.equal(installed.version, moduleVersion());
    assert.equal(installed.license, 'BSD-3-Clause');
    assert.ok(installed.repository?.url && installed.exports?.['.'], JSON.stringify(installed));
    const requireApp = Module.createRequire(path.join(app, 'index.js'));
    assert.ok(requireApp.resolve('redis-recipes').startsWith(path.join(app, 'node_modules')));
    await replay(path.join(PACKAGE, 'README.md'), server.url, requireApp);
  } finally {
    server.stop();
    fs.rmSync(work, { recursive: true, force: true });
  }
});
