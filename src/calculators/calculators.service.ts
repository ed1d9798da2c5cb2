import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, In, IsNull, Repository } from 'typeorm';
import { queryPrepared } from '../core/database/prepared.js';
import { CALCULATORS_LIST } from './calculator.statements.js';
import { newId } from '../core/ids.js';
import { CalculatorEntity } from './calculator.entity.js';
import type { CountedCalculator } from './calculator.serializer.js';

export interface NewCalculator {
  /** A fixed id (the demo seed's); a new one otherwise. */
  id?: string;
  workspaceId: string;
  name: string;
  status?: string;
  folderId?: string;
  slug?: string | null;
}

@Injectable()
export class CalculatorsService {
  constructor(
    @InjectRepository(CalculatorEntity) private readonly calculators: Repository<CalculatorEntity>,
    @InjectDataSource() private readonly dataSource: DataSource,
  ) {}

  /** A page of the workspace's live calculators, oldest first, with their submission counters. */
  list(workspaceId: string, limit: number, offset: number): Promise<CountedCalculator[]> {
    return queryPrepared<CountedCalculator>(this.dataSource, CALCULATORS_LIST, [workspaceId, limit, offset]);
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
      newElementCount: {},
      createdAt: now,
      updatedAt: now,
      removedAt: null,
    });
    await this.calculators.insert(calculator);
    return calculator;
  }
}
