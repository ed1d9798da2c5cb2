import { Module } from '@nestjs/common';
import { DeliveryStore } from './delivery-store.js';

/** The owner of `deliveries` and `delivery_attempts`, for every module that changes a delivery. */
@Module({
  providers: [DeliveryStore],
  exports: [DeliveryStore],
})
export class DeliveryStoreModule {}
