// Per-user data routes: profiles, account data and tags, filters, typing, receipts and read
// markers, send-to-device, presence, the user directory and push rules.

import type { RouteDef } from '../../http/route.js';
import type { AccountDataService } from '../../users/account-data.js';
import type { FilterService } from '../../users/filters.js';
import type { PresenceService } from '../../users/presence.js';
import type { ProfileService } from '../../users/profiles.js';
import type { PushRuleService } from '../../users/push-rules.js';
import type { ReceiptService } from '../../users/receipts.js';
import type { ToDeviceService } from '../../users/to-device.js';
import type { TypingService } from '../../users/typing.js';
import type { UserDirectoryService } from '../../users/user-directory.js';
import { accountDataRoutes } from './account-data.js';
import { filterRoutes } from './filters.js';
import { presenceRoutes } from './presence.js';
import { profileRoutes } from './profile.js';
import { pushRuleRoutes } from './push-rules.js';
import { receiptRoutes } from './receipts.js';
import { toDeviceRoutes } from './to-device.js';
import { typingRoutes } from './typing.js';
import { userDirectoryRoutes } from './user-directory.js';

export { accountDataRoutes, filterRoutes, presenceRoutes, profileRoutes, pushRuleRoutes, receiptRoutes, toDeviceRoutes, typingRoutes, userDirectoryRoutes };

export interface UserDataServices {
  readonly profiles: ProfileService;
  readonly accountData: AccountDataService;
  readonly filters: FilterService;
  readonly typing: TypingService;
  readonly receipts: ReceiptService;
  readonly toDevice: ToDeviceService;
  readonly presence: PresenceService;
  readonly userDirectory: UserDirectoryService;
  readonly pushRules: PushRuleService;
}

export function userDataRoutes(services: UserDataServices): RouteDef[] {
  return [
    ...profileRoutes(services),
    ...accountDataRoutes(services),
    ...filterRoutes(services),
    ...typingRoutes(services),
    ...receiptRoutes(services),
    ...toDeviceRoutes(services),
    ...presenceRoutes(services),
    ...userDirectoryRoutes(services),
    ...pushRuleRoutes(services),
  ];
}
