import { DynamicModule, Module, type INestApplicationContext, type ModuleMetadata, type Type } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { TypeOrmModule } from '@nestjs/typeorm';
import { coreImports } from '../core/core-imports.js';
import { AuthModule } from '../auth/auth.module.js';
import { CalculatorsModule } from '../calculators/calculators.module.js';
import { ConfigError, loadConfig, type AppConfig } from '../core/config/config.js';
import { runMigrations } from '../core/database/migrate.js';
import { SubmissionsModule } from '../submissions/submissions.module.js';
import { WebhookCalculatorEntity, WebhookEntity } from '../webhooks/webhook.entity.js';
import { WorkspacesModule } from '../workspaces/workspaces.module.js';
import { CliError, EXIT_CONFIG } from './cli-error.js';
import type { CliIo } from './cli-io.js';

export interface ProvisioningNeeds {
  command: string;
  handler: Type;
  /** Submissions enqueue their deliveries: the queue, which connects to Redis. */
  usesQueue: boolean;
  /** Refused before connecting when NODE_ENV=production. */
  developmentOnly: boolean;
}

/** What a command's handler runs in: no HTTP server, no delivery worker; the queue only for a command that asks. */
@Module({})
export class ProvisioningModule {
  static forRoot(config: AppConfig, { handler, usesQueue }: ProvisioningNeeds): DynamicModule {
    const imports: NonNullable<ModuleMetadata['imports']> = [
      AuthModule,
      WorkspacesModule,
      CalculatorsModule,
      // Read by the listings; WebhooksModule itself would connect to the queue.
      TypeOrmModule.forFeature([WebhookEntity, WebhookCalculatorEntity]),
    ];
    if (usesQueue) imports.push(SubmissionsModule);
    return { module: ProvisioningModule, imports: [...coreImports(config), ...imports], providers: [handler] };
  }
}

/** Reads the configuration, applies pending migrations and opens the context a command's handler needs. */
export async function openProvisioning(io: CliIo, needs: ProvisioningNeeds): Promise<INestApplicationContext> {
  const config = configFrom(io.env);
  if (needs.developmentOnly && config.env === 'production') {
    throw new CliError(`${needs.command} is for development only; refusing with NODE_ENV=production`);
  }
  if (config.migrationsRun) {
    const applied = await runMigrations(config);
    if (applied.length > 0) io.stderr(`Applied migrations: ${applied.join(', ')}\n`);
  }
  return NestFactory.createApplicationContext(ProvisioningModule.forRoot(config, needs), {
    logger: false,
    abortOnError: false,
  });
}

function configFrom(env: NodeJS.ProcessEnv): AppConfig {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) throw new CliError(error.message, EXIT_CONFIG);
    throw error;
  }
}
