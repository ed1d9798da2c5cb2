import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

// The layout's rules, checked on the source files' relative imports (type-only ones included).
// Each rule is one `it` below; a rule gets its helpers here, beside the import graph.

const SRC = dirname(fileURLToPath(import.meta.url));

// `import … from '…'`, `export … from '…'`, `import '…'` and `import('…')`.
const IMPORT =
  /^\s*(?:import|export)\b[^'";]*?\bfrom\s*['"]([^'"]+)['"]|^\s*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The src files a file imports by relative path (`./x.js` is the source `./x.ts`). */
function importsOf(file: string): string[] {
  const specifiers = [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? m[3]);
  return specifiers
    .filter((specifier) => specifier.startsWith('.'))
    .map((specifier) => resolve(dirname(file), specifier).replace(/\.js$/, '.ts'))
    .filter((target) => existsSync(target));
}

/** Every src file with the src files it imports, paths relative to src. */
function importGraph(): Map<string, string[]> {
  const name = (path: string) => relative(SRC, path);
  return new Map(sourceFiles(SRC).map((file) => [name(file), importsOf(file).map(name)]));
}

/** Import cycles found by a depth-first walk (at least one per circle), each as its files, the first repeated. */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (file: string): void => {
    const onPath = path.indexOf(file);
    if (onPath >= 0) return void found.push([...path.slice(onPath), file]);
    if (done.has(file)) return;
    path.push(file);
    for (const target of graph.get(file) ?? []) visit(target);
    path.pop();
    done.add(file);
  };
  for (const file of graph.keys()) visit(file);
  return found;
}

const graph = importGraph();
const edges = [...graph].flatMap(([from, targets]) => targets.map((to) => ({ from, to })));
const inFolder = (folder: string) => (file: string) => file.startsWith(`${folder}/`);

describe('architecture', () => {
  it('reads the import graph', () => {
    expect(graph.size).toBeGreaterThan(100);
    expect(graph.get('main.ts')).toContain('api-process.ts');
    expect(graph.get('api-process.ts')).toContain('app.module.ts');
  });

  it('core, the ground floor, imports nothing from src outside core', () => {
    const inCore = inFolder('core');
    const upward = edges
      .filter(({ from, to }) => inCore(from) && !inCore(to))
      .map(({ from, to }) => `${from} -> ${to}`);
    expect(upward).toEqual([]);
  });

  it('has no import cycle', () => {
    expect(cycles(graph).map((cycle) => cycle.join(' -> '))).toEqual([]);
  });

  it('has no setInterval in the delivery feature: scheduled work is a job scheduler (src/scheduling)', () => {
    const timers = sourceFiles(join(SRC, 'delivery'))
      .filter((file) => !file.endsWith('.spec.ts') && /\bsetInterval\(/.test(readFileSync(file, 'utf8')))
      .map((file) => relative(SRC, file));
    expect(timers).toEqual([]);
  });
});
