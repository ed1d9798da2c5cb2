import { readFileSync } from 'node:fs';
import { CONFIG_DOC_FILES, renderConfigReference, renderEnvExample } from './config-reference.js';
import { EnvironmentVariables, loadConfig } from './config.js';

const committed = (file: string) => readFileSync(file, 'utf8');

describe('the configuration reference and .env.example', () => {
  it.each([
    [CONFIG_DOC_FILES.reference, renderConfigReference],
    [CONFIG_DOC_FILES.example, renderEnvExample],
  ])('%s is what `npm run docs:config` writes from the code', (file, render) => {
    const stale = committed(file) !== render();
    expect(stale ? `${file} is out of step with src/core/config: run npm run docs:config` : 'in step').toBe('in step');
  });

  it('names every variable the validation reads, each once', () => {
    const reference = renderConfigReference();
    for (const name of Object.keys(new EnvironmentVariables())) {
      expect(reference.match(new RegExp(`^\\| \`${name}\` \\|`, 'gm'))).toHaveLength(1);
    }
  });

  it('shows each range as the validation enforces it', () => {
    const reference = renderConfigReference();
    expect(reference).toMatch(/^\| `WORKER_CONCURRENCY` \| `500` \| count \| 1 to 10000 \|/m);
    expect(() => loadConfig({ WORKER_CONCURRENCY: '10001' })).toThrow(/WORKER_CONCURRENCY/);
    expect(reference).toMatch(
      /^\| `LOG_LEVEL` \| `info` \| name \| fatal, error, warn, info, debug, trace, silent \|/m,
    );
  });

  it('.env.example, loaded as it is, is the default configuration', () => {
    const example = Object.fromEntries(
      committed(CONFIG_DOC_FILES.example)
        .split('\n')
        .filter((line) => /^[A-Z_]+=/.test(line))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    expect(Object.keys(example).sort()).toEqual(Object.keys(new EnvironmentVariables()).sort());
    expect(loadConfig(example)).toEqual(loadConfig({}));
  });
});
