import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../', import.meta.url));
const STORE = fileURLToPath(new URL('./', import.meta.url));
const MIGRATIONS = join(SRC, 'core/database/migrations');

const sourceFiles = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return /\.(ts|sql)$/.test(entry.name) && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });

// SQL writes, and TypeORM writes through a repository, a manager or the query builder on the two entities.
const WRITES = [
  /\b(INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(deliveries|delivery_attempts)\b/i,
  /\b(update|insert|delete|save|create|upsert|softDelete|increment|decrement)\(\s*(DeliveryEntity|DeliveryAttemptEntity)\b/,
  /getRepository\(\s*(DeliveryEntity|DeliveryAttemptEntity)\s*\)\s*\.\s*(update|insert|delete|save|upsert|increment|decrement|createQueryBuilder\(\)\s*\.\s*(update|insert|delete))/,
  /\.into\(\s*(DeliveryEntity|DeliveryAttemptEntity)\b/,
];

describe('the delivery store owns its tables', () => {
  const files = sourceFiles(SRC).filter((path) => !path.startsWith(STORE) && !path.startsWith(MIGRATIONS));

  it('no file outside src/delivery/store (migrations aside) writes deliveries or delivery_attempts', () => {
    const writers = files.flatMap((path) => {
      const text = readFileSync(path, 'utf8');
      return WRITES.filter((pattern) => pattern.test(text)).map((pattern) => `${relative(SRC, path)}: ${pattern}`);
    });
    expect(writers).toEqual([]);
  });

  it('the check sees a write where there is one (the store itself)', () => {
    const storeText = sourceFiles(STORE).map((path) => readFileSync(path, 'utf8'));
    for (const pattern of [WRITES[0], WRITES[1]]) expect(storeText.some((text) => pattern.test(text))).toBe(true);
  });
});
