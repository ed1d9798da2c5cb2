import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createTestApp, type TestApp } from '../support/test-app.js';

const SRC = new URL('../../src', import.meta.url).pathname;

/** The class names of every `*.entity.ts` file under src. */
function entityClassesInSrc(): string[] {
  const files = readdirSync(SRC, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.entity.ts'));
  return files.flatMap((file) =>
    [...readFileSync(join(SRC, file), 'utf8').matchAll(/^export class (\w+Entity)\b/gm)].map((m) => m[1]),
  );
}

// CI fails when an entity changes without a migration: the schema the migrations build must be the
// one the entities describe, so TypeORM has nothing to add, alter or drop. The entities are those the
// api runs with, which its feature modules register (TypeOrmModule.forFeature).
describe('migrations and entities', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('the api registers every entity class of src', () => {
    const registered = t.dataSource.entityMetadatas.map((m) => m.name).sort();
    expect(registered).toEqual(entityClassesInSrc().sort());
    expect(registered.length).toBeGreaterThan(10);
  });

  it('a database built from the migrations needs no schema change for the entities', async () => {
    const pending = await t.dataSource.driver.createSchemaBuilder().log();
    expect(pending.upQueries.map((q) => q.query)).toEqual([]);
  });
});
