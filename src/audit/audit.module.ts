import { Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { AuditEventEntity } from './audit-event.entity.js';
import { AuditEvents } from './audit-events.js';
import { AuditEventsController } from './audit-events.controller.js';
import { AuditInterceptor } from './audited.js';

/** The audit log's store, for the routes that record events and for the worker's retention run. */
@Module({
  imports: [TypeOrmModule.forFeature([AuditEventEntity])],
  providers: [AuditEvents, AuditInterceptor],
  exports: [AuditEvents, AuditInterceptor],
})
export class AuditEventsModule {}

/** GET /audit-events. */
@Module({ imports: [AuditEventsModule], controllers: [AuditEventsController] })
export class AuditModule {}
