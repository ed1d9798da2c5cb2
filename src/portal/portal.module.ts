import { Module } from '@nestjs/common';
import { AuditEventsModule } from '../audit/audit-events.module.js';
import { PortalLinksController } from './portal-links.controller.js';
import { PortalLinksModule } from './portal-links.module.js';
import { PortalSessionsController } from './portal-sessions.controller.js';

/** POST/GET/DELETE /portal-links and POST /portal-sessions (DESIGN 10). */
@Module({
  imports: [PortalLinksModule, AuditEventsModule],
  controllers: [PortalLinksController, PortalSessionsController],
})
export class PortalModule {}
