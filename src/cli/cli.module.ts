import { DynamicModule, Module, type ModuleMetadata } from '@nestjs/common';
import { coreImports } from '../app.module.js';
import { AuthModule } from '../auth/auth.module.js';
import { CalculatorsModule } from '../calculators/calculators.module.js';
import type { AppConfig } from '../core/config/config.js';
import { WorkspacesModule } from '../workspaces/workspaces.module.js';

export type CliImports = NonNullable<ModuleMetadata['imports']>;

/** What the provisioning commands use: no HTTP server, no delivery worker; the queue only for a command that asks. */
@Module({})
export class CliModule {
  static forRoot(config: AppConfig, extra: CliImports = []): DynamicModule {
    return {
      module: CliModule,
      imports: [...coreImports(config), AuthModule, WorkspacesModule, CalculatorsModule, ...extra],
    };
  }
}
