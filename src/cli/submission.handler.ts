import { Injectable } from '@nestjs/common';
import { DataSource, IsNull } from 'typeorm';
import { CalculatorEntity } from '../calculators/calculator.entity.js';
import { serializeSubmission } from '../submissions/submission.serializer.js';
import { SubmissionsService } from '../submissions/submissions.service.js';
import { CliError } from './cli-error.js';
import type { JsonObject } from './options.js';
import type { CommandOutput } from './provisioning-command.js';

export interface NewSubmissionOptions {
  calculator: string;
  data: JsonObject;
  finished?: boolean;
  meta?: JsonObject;
}

@Injectable()
export class SubmissionHandler {
  constructor(
    private readonly dataSource: DataSource,
    private readonly submissions: SubmissionsService,
  ) {}

  /** Records the submission as a visitor's would be, so the calculator's webhooks receive it. */
  async create({
    calculator: calculatorId,
    data,
    finished = true,
    meta = {},
  }: NewSubmissionOptions): Promise<CommandOutput> {
    const calculator = await this.dataSource
      .getRepository(CalculatorEntity)
      .findOneBy({ id: calculatorId, removedAt: IsNull() });
    if (!calculator) throw new CliError(`unknown calculator "${calculatorId}"`);
    const submission = serializeSubmission(
      await this.submissions.create(calculator.workspaceId, calculator.id, { data, finished, meta }),
    );
    return { json: submission, text: JSON.stringify(submission, null, 2) };
  }
}
