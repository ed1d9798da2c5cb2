// Run after `npm install <pkg>` here: this machine's registry mirror lacks some other-platform builds
// of optional native packages (msgpackr-extract, unrs-resolver), so npm leaves them out of
// package-lock.json and `npm ci` then refuses the lock. This adds their entries (platform-gated and
// optional, so no platform but their own ever installs them), exactly as npm records them elsewhere.
import { readFileSync, writeFileSync } from 'node:fs';

const NATIVE_SCOPES = /^(@msgpackr-extract|@unrs)\//;
const CPUS = new Set(['arm', 'arm64', 'x64', 'ia32', 'loong64', 'ppc64', 'riscv64', 's390x', 'wasm32']);

function platformOf(name) {
  const [os, cpu, abi] = name
    .split('/')[1]
    .replace(/^(msgpackr-extract|resolver-binding)-/, '')
    .split('-');
  if (os === 'wasm32') return { cpu: ['wasm32'] };
  const entry = CPUS.has(cpu) ? { cpu: [cpu], os: [os] } : {};
  if (abi?.startsWith('gnu')) entry.libc = ['glibc'];
  if (abi?.startsWith('musl')) entry.libc = ['musl'];
  return entry;
}

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8'));
const packages = lock.packages;
let added = 0;
for (const entry of Object.values(packages)) {
  for (const [dep, version] of Object.entries(entry.optionalDependencies ?? {})) {
    const key = `node_modules/${dep}`;
    if (packages[key] || !NATIVE_SCOPES.test(dep)) continue;
    packages[key] = {
      version,
      ...platformOf(dep),
      ...(entry.dev ? { dev: true } : {}),
      license: 'MIT',
      optional: true,
    };
    added++;
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === '' ? -1 : b === '' ? 1 : a.localeCompare(b))),
);
writeFileSync('package-lock.json', `${JSON.stringify(lock, null, 2)}\n`);
console.log(`package-lock.json: added ${added} optional platform entries`);
