import { Module } from '@nestjs/common';
import { AuditEventsController } from './audit-events.controller.js';
import { AuditEventsModule } from './audit-events.module.js';

/** GET /audit-events. */
@Module({ imports: [AuditEventsModule], controllers: [AuditEventsController] })
export class AuditModule {}
