import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, IsNull, Repository } from 'typeorm';
import { prepared, queryPrepared } from '../core/database/prepared.js';
import { newId } from '../core/ids.js';
import { CalculatorEntity } from './calculator.entity.js';
import type { CalculatorFields } from './calculator.serializer.js';

export interface NewCalculator {
  /** A fixed id (the demo seed's); a new one otherwise. */
  id?: string;
  workspaceId: string;
  name: string;
  status?: string;
  folderId?: string;
  slug?: string | null;
}

// Postgres formats the timestamps (ISO 8601 UTC, milliseconds): no Date is built per field.
const isoUtc = (column: string, alias: string) =>
  `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS "${alias}"`;

// The hottest list: one prepared statement, rows straight into the serializer's shape.
const LIST_PAGE = prepared(
  'calculators_list_page',
  `SELECT id, workspace_id AS "workspaceId", folder_id AS "folderId", name, slug, status, elements, layouts,
     variables, submit_actions AS "submitActions", theme_id AS "themeId", template_visibility AS "templateVisibility",
     template_calculator_id AS "templateCalculatorId", clones_count AS "clonesCount",
     impressions_count AS "impressionsCount", ${isoUtc('last_impression_at', 'lastImpressionAt')},
     submissions_count AS "submissionsCount", ${isoUtc('last_submission_at', 'lastSubmissionAt')},
     new_element_count AS "newElementCount", ${isoUtc('created_at', 'createdAt')}, ${isoUtc('updated_at', 'updatedAt')}
   FROM calculators
   WHERE workspace_id = $1 AND removed_at IS NULL
   ORDER BY created_at, id
   LIMIT $2 OFFSET $3`,
);

@Injectable()
export class CalculatorsService {
  constructor(@InjectRepository(CalculatorEntity) private readonly calculators: Repository<CalculatorEntity>) {}

  list(workspaceId: string, limit: number, offset: number): Promise<CalculatorFields[]> {
    return queryPrepared<CalculatorFields>(this.calculators.manager.connection, LIST_PAGE, [
      workspaceId,
      limit,
      offset,
    ]);
  }

  /** The ids among `ids` that are live calculators of the workspace. */
  async existingIds(workspaceId: string, ids: string[]): Promise<Set<string>> {
    const rows = await this.calculators.find({
      select: { id: true },
      where: { workspaceId, id: In(ids), removedAt: IsNull() },
    });
    return new Set(rows.map((r) => r.id));
  }

  async create(input: NewCalculator): Promise<CalculatorEntity> {
    const now = new Date();
    const calculator = this.calculators.create({
      id: input.id ?? newId(),
      workspaceId: input.workspaceId,
      folderId: input.folderId ?? newId(),
      name: input.name,
      slug: input.slug ?? null,
      status: input.status ?? 'draft',
      elements: [],
      layouts: { lg: [], md: [], sm: [] },
      variables: [],
      submitActions: {},
      themeId: 'default',
      templateVisibility: null,
      templateCalculatorId: null,
      clonesCount: 0,
      impressionsCount: 0,
      lastImpressionAt: null,
      submissionsCount: 0,
      lastSubmissionAt: null,
      newElementCount: {},
      createdAt: now,
      updatedAt: now,
      removedAt: null,
    });
    await this.calculators.insert(calculator);
    return calculator;
  }
}
