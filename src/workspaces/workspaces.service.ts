import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { ApiKeysService, type IssuedApiKey } from '../auth/api-keys.service.js';
import { newId } from '../core/ids.js';
import { WorkspaceEntity } from './workspace.entity.js';

@Injectable()
export class WorkspacesService {
  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(WorkspaceEntity) private readonly workspaces: Repository<WorkspaceEntity>,
    private readonly apiKeys: ApiKeysService,
  ) {}

  /** Creates a workspace and its first API key in one transaction. */
  create(name: string): Promise<{ workspace: WorkspaceEntity } & IssuedApiKey> {
    return this.dataSource.transaction(async (manager) => {
      const now = new Date();
      const workspace = manager.create(WorkspaceEntity, { id: newId(), name, createdAt: now, updatedAt: now });
      await manager.insert(WorkspaceEntity, workspace);
      const issued = await this.apiKeys.issue(workspace.id, manager);
      return { workspace, ...issued };
    });
  }

  findById(id: string): Promise<WorkspaceEntity | null> {
    return this.workspaces.findOneBy({ id });
  }
}
