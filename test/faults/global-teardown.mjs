// After the scenarios: whatever a scenario that failed half-way did not remove.
import { removeLeftovers } from './leftovers.mjs';

export default async function globalTeardown() {
  removeLeftovers();
}
