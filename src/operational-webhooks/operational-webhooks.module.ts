import { Module } from '@nestjs/common';
import { AuditEventsModule } from '../audit/audit-events.module.js';
import { HostWakesModule } from '../delivery/host-wakes.module.js';
import { DeliveryStoreModule } from '../delivery/store/delivery-store.module.js';
import { OperationalWebhooksController } from './operational-webhooks.controller.js';
import { OperationalWebhooksService } from './operational-webhooks.service.js';

/** The operational webhooks API (DESIGN 10); emitting their events is OperationalEventsModule's. */
@Module({
  imports: [HostWakesModule, DeliveryStoreModule, AuditEventsModule /* @Audited routes */],
  controllers: [OperationalWebhooksController],
  providers: [OperationalWebhooksService],
})
export class OperationalWebhooksModule {}
