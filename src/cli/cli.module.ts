import { Module } from '@nestjs/common';
import { ApiKeyCreateCommand, ApiKeyListCommand, ApiKeyRevokeCommand } from './apikey.command.js';
import { CalculatorCreateCommand } from './calculator.command.js';
import { CliIo } from './cli-io.js';
import { CliProgram } from './cli-program.js';
import { SeedDemoCommand } from './seed-demo.command.js';
import { SubmissionCreateCommand } from './submission.command.js';
import { WebhookListCommand } from './webhook.command.js';
import { WorkspaceCreateCommand, WorkspaceListCommand } from './workspace.command.js';

/** The provisioning commands, as nest-commander runs them; nothing here connects (see ProvisioningCommand). */
@Module({
  providers: [
    CliIo,
    CliProgram,
    WorkspaceCreateCommand,
    WorkspaceListCommand,
    ApiKeyCreateCommand,
    ApiKeyListCommand,
    ApiKeyRevokeCommand,
    CalculatorCreateCommand,
    SubmissionCreateCommand,
    SeedDemoCommand,
    WebhookListCommand,
  ],
})
export class CliModule {}
