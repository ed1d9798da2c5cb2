import { Module } from '@nestjs/common';
import { HostWakesModule } from '../delivery/host-wakes.module.js';
import { DeliveryStoreModule } from '../delivery/store/delivery-store.module.js';
import { OperationalEvents } from './operational-events.js';

/** Emitting operational events, for the api's changes and the worker's alike. */
@Module({
  imports: [HostWakesModule, DeliveryStoreModule],
  providers: [OperationalEvents],
  exports: [OperationalEvents],
})
export class OperationalEventsModule {}
