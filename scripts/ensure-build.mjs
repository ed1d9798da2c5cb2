// Builds dist/ when it is missing or older than src/, so `npm start` works on a fresh clone.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

const newest = (dir) =>
  readdirSync(dir, { withFileTypes: true }).reduce((max, entry) => {
    const path = join(dir, entry.name);
    return Math.max(max, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }, 0);

// npm scripts run the Node 24 that the `node` devDependency puts in node_modules/.bin; a bare `node` may be older.
if (Number(process.versions.node.split('.')[0]) < 24) {
  process.stderr.write(
    `Node 24 is required, this is ${process.version}: run through npm (npm start, npm test), whose scripts use node_modules/.bin/node\n`,
  );
  process.exit(1);
}
if (!existsSync('src')) process.exit(0); // a production image ships dist/ only
const built = existsSync('dist/main.js') ? newest('dist') : 0;
if (built < Math.max(newest('src'), statSync('tsconfig.json').mtimeMs, statSync('tsconfig.build.json').mtimeMs)) {
  process.stderr.write('Building (dist/ is missing or older than src/)...\n');
  execFileSync(process.execPath, ['node_modules/@nestjs/cli/bin/nest.js', 'build'], { stdio: 'inherit' });
}
