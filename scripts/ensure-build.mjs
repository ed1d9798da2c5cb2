// Builds dist/ (the api and the console) when it is missing or older than its sources, so `npm start` works on a
// fresh clone.
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
// A checkout without console/ (an older tree, e.g. FAULTS_APP_DIR's) builds the api alone.
const withConsole = existsSync('console');
const complete = existsSync('dist/main.js') && (!withConsole || existsSync('dist/public/console/index.html'));
const built = complete ? newest('dist') : 0;
const sources = ['src', 'console', 'tsconfig.json', 'tsconfig.build.json'].filter((path) => existsSync(path));
if (
  built < Math.max(...sources.map((path) => (statSync(path).isDirectory() ? newest(path) : statSync(path).mtimeMs)))
) {
  process.stderr.write('Building (dist/ is missing or older than src/ or console/)...\n');
  // What `npm run build` runs: nest build empties dist/, then vite adds the console to it.
  execFileSync(process.execPath, ['node_modules/@nestjs/cli/bin/nest.js', 'build'], { stdio: 'inherit' });
  if (withConsole) {
    execFileSync(process.execPath, ['node_modules/vite/bin/vite.js', 'build', '-c', 'console/vite.config.ts'], {
      stdio: 'inherit',
    });
  }
}
