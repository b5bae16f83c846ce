import type { TelephonyPort, TelephonyProviderName } from './port';
import { simulatedCarrier } from './simulated';
import { twilioCarrier } from './twilio';

export type * from './port';

let port: TelephonyPort | undefined;

/** This process's carrier: TELEPHONY_PROVIDER `simulated` (default) or `twilio`. */
export function telephony(): TelephonyPort {
  if (port) return port;
  const name = (process.env.TELEPHONY_PROVIDER || 'simulated') as TelephonyProviderName;
  if (name === 'simulated') port = simulatedCarrier();
  else if (name === 'twilio') port = twilioCarrier();
  else throw new Error(`TELEPHONY_PROVIDER must be "simulated" or "twilio", got "${name}".`);
  return port;
}

/** Forget the carrier (tests that change the environment). */
export function resetTelephony(): void {
  port = undefined;
}
