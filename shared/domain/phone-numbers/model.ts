import type { AvailableNumber } from '../../adapters/telephony/port';
import type { PhoneNumberSource, PhoneNumberStatus } from './schemas';
import type { OverflowStored } from './overflow';

/**
 * A phone number's item as stored (the number itself: ./service.ts; renewal billing:
 * ../billing/renewals.ts). Apart from the service so that billing, calls and campaigns can read
 * the item without importing the service that imports them.
 */
export interface PhoneNumberItem extends OverflowStored {
  pk: string;
  sk: string;
  entity: string;
  version: number;
  gsi1pk: string;
  gsi1sk: string;
  id: string;
  organization_id: string;
  source: PhoneNumberSource;
  phone_number: string;
  name: string;
  status: PhoneNumberStatus;
  inbound_agent_id: string | null;
  /** The inbound routing webhook (./inbound-webhook.ts): its URL, timeout and sealed signing secret, all three or none. */
  inbound_webhook_url?: string;
  inbound_webhook_timeout_ms?: number;
  inbound_webhook_secret_sealed?: string;
  in_use: number;
  created_at: string;
  updated_at: string;
  released_at: string | null;
  // purchased
  price?: number;
  per_minute_price_inbound?: number;
  per_minute_price_outbound?: number;
  country?: string;
  locality?: string;
  region?: string;
  capabilities?: AvailableNumber['capabilities'];
  purchased_at?: string;
  provider?: string;
  provider_ref?: string;
  carrier_released_at?: string;
  /** Renewal billing (active purchased numbers only): when the next month is due, months paid so far. */
  next_renewal_at?: string;
  periods_billed?: number;
  gsi2pk?: string;
  gsi2sk?: string;
  // imported
  phone?: string;
  type?: 'sip' | 'pstn';
  termination_uri?: string;
  sip_username?: string;
  sip_password_sealed?: string;
}
