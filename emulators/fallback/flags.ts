// In-process stand-in for Firestore-backed feature flags (gcloud missing): code defaults only.
import type { FeatureFlags, Flags } from '../../lib/adapters/flags';

export function createStaticFlags(defaults: Flags = {}): FeatureFlags {
  return { forUser: async () => ({ ...defaults }), close: async () => {} };
}
