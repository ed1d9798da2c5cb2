import { Inject, Injectable } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { AppConfig } from '../core/config/config.js';
import { APP_CONFIG } from '../core/config/config.module.js';
import { DEMO_API_KEY, DEMO_CALCULATORS, describeDemoSeed, seedDemo } from '../workspaces/demo-seed.js';
import { serializeWorkspace } from '../workspaces/workspace.serializer.js';
import type { CommandOutput } from './provisioning-command.js';

@Injectable()
export class SeedDemoHandler {
  constructor(
    private readonly moduleRef: ModuleRef,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  async seed(): Promise<CommandOutput> {
    const result = await seedDemo(this.moduleRef, this.config);
    return {
      json: {
        workspace: serializeWorkspace(result.workspace),
        apiKey: DEMO_API_KEY,
        calculators: DEMO_CALCULATORS,
        created: result.created,
        apiKeyRevoked: result.apiKeyRevoked,
      },
      text: describeDemoSeed(result, this.config.port).join('\n'),
    };
  }
}
