import type { INestApplicationContext } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { prefixOf } from '../auth/api-key.js';
import { ApiKeysService } from '../auth/api-keys.service.js';
import { CalculatorsService } from '../calculators/calculators.service.js';
import type { AppConfig } from '../core/config/config.js';
import { WorkspaceEntity } from './workspace.entity.js';

/** The documented development key of the demo workspace: public, so never seeded in production. */
export const DEMO_API_KEY = 'ack_demo0key_DevelopmentOnlyDemoKey-NeverUseInProduction';
export const DEMO_WORKSPACE_ID = 'demo0workspace0000000000';
export const DEMO_WORKSPACE_NAME = 'Demo workspace';
export const DEMO_FOLDER_ID = 'demo0folder0000000000000';
export const DEMO_CALCULATORS = [
  { id: 'demo0calculator000000001', name: 'Mortgage calculator' },
  { id: 'demo0calculator000000002', name: 'Quote estimator' },
  { id: 'demo0calculator000000003', name: 'ROI calculator' },
] as const;

export interface DemoSeedResult {
  workspace: WorkspaceEntity;
  created: { workspace: boolean; calculators: number; apiKey: boolean };
  /** Someone revoked the demo key; seeding leaves that decision alone. */
  apiKeyRevoked: boolean;
}

/** Creates whatever part of the demo workspace is missing (fixed ids, so running it again creates nothing). */
export async function seedDemo(app: Pick<INestApplicationContext, 'get'>, config: AppConfig): Promise<DemoSeedResult> {
  if (config.env === 'production') {
    throw new Error(
      'the demo seed creates a publicly documented API key: refused with NODE_ENV=production (unset SEED_DEMO)',
    );
  }
  // strict: false, so that a module's ModuleRef (the CLI's seed:demo handler) also finds its imports' providers.
  const dataSource = app.get(DataSource, { strict: false });
  const apiKeys = app.get(ApiKeysService, { strict: false });
  const calculators = app.get(CalculatorsService, { strict: false });

  const now = new Date();
  const inserted = await dataSource
    .createQueryBuilder()
    .insert()
    .into(WorkspaceEntity)
    .values({ id: DEMO_WORKSPACE_ID, name: DEMO_WORKSPACE_NAME, createdAt: now, updatedAt: now })
    .orIgnore()
    .returning('id')
    .execute();

  const existing = await calculators.existingIds(
    DEMO_WORKSPACE_ID,
    DEMO_CALCULATORS.map((c) => c.id),
  );
  let createdCalculators = 0;
  for (const { id, name } of DEMO_CALCULATORS.filter((c) => !existing.has(c.id))) {
    const created = await calculators
      .create({ id, workspaceId: DEMO_WORKSPACE_ID, name, folderId: DEMO_FOLDER_ID })
      .catch(ignoreUniqueViolation);
    if (created) createdCalculators += 1;
  }

  const keyBefore = await findDemoKey(apiKeys);
  if (!keyBefore) await apiKeys.importKey(DEMO_WORKSPACE_ID, DEMO_API_KEY);
  const key = keyBefore ?? (await findDemoKey(apiKeys));

  return {
    workspace: await dataSource.getRepository(WorkspaceEntity).findOneByOrFail({ id: DEMO_WORKSPACE_ID }),
    created: { workspace: inserted.raw.length > 0, calculators: createdCalculators, apiKey: !keyBefore },
    apiKeyRevoked: key?.revokedAt != null,
  };
}

// Two processes seeding at once (e.g. two api replicas starting): the other one created it.
function ignoreUniqueViolation(error: { code?: string }): null {
  if (error.code === '23505') return null;
  throw error;
}

const findDemoKey = async (apiKeys: ApiKeysService) =>
  (await apiKeys.list(DEMO_WORKSPACE_ID)).find((k) => k.prefix === prefixOf(DEMO_API_KEY));

/** What to tell a developer after seeding: the key and a request that works with it. */
export function describeDemoSeed(result: DemoSeedResult, port: number): string[] {
  const { created } = result;
  const made = [
    created.workspace && 'workspace',
    created.calculators > 0 && `${created.calculators} calculator(s)`,
    created.apiKey && 'API key',
  ].filter(Boolean);
  const lines = [
    `Demo workspace ${DEMO_WORKSPACE_ID} ready (${made.length > 0 ? `created: ${made.join(', ')}` : 'already seeded, nothing created'}).`,
    `Demo API key (development only): ${DEMO_API_KEY}`,
    `Try: curl -H 'x-ac-api-key: ${DEMO_API_KEY}' http://localhost:${port}/api/v1/me`,
  ];
  if (result.apiKeyRevoked)
    lines.push('Warning: the demo API key has been revoked and stays revoked; requests with it get 401.');
  return lines;
}
