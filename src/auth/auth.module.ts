import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { PortalLinksModule } from '../portal/portal-links.module.js';
import { ApiKeyCache } from './api-key-cache.js';
import { ApiKeyEntity } from './api-key.entity.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { ApiKeysService } from './api-keys.service.js';

@Module({
  imports: [TypeOrmModule.forFeature([ApiKeyEntity]), PortalLinksModule], // the guard checks portal sessions too
  providers: [ApiKeysService, ApiKeyCache, ApiKeyGuard],
  exports: [ApiKeysService, ApiKeyGuard],
})
export class AuthModule {}
