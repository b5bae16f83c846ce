import { resetConfig } from '../../../shared/config';
import { addressAllowed, checkUrlShape, classifyAddress, EgressRefusedError } from '../../../shared/adapters/egress';

describe('classifyAddress', () => {
  it.each([
    ['8.8.8.8', 'public'],
    ['93.184.216.34', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['172.32.0.1', 'public'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['169.254.10.10', 'link-local'],
    ['169.254.169.254', 'metadata'],
    ['0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['fe80::1', 'link-local'],
    ['fd12:3456::1', 'private'],
    ['fc00::1', 'private'],
    ['fd00:ec2::254', 'metadata'],
    ['ff02::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2606:4700:4700::1111', 'public'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a00:1', 'private'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['2002:0a00:0001::1', 'private'],
    ['[::1]', 'loopback'],
  ])('%s is %s', (address, expected) => {
    expect(classifyAddress(address)).toBe(expected);
  });

  it('allows public addresses, and loopback only when asked to', () => {
    expect(addressAllowed('public', false)).toBe(true);
    expect(addressAllowed('loopback', false)).toBe(false);
    expect(addressAllowed('loopback', true)).toBe(true);
    for (const cls of ['private', 'link-local', 'metadata', 'unspecified', 'multicast', 'reserved'] as const) {
      expect(addressAllowed(cls, true)).toBe(false);
    }
  });
});

describe('checkUrlShape', () => {
  // The guard reads ALLOW_LOOPBACK_FETCH from the configuration, which needs its required settings.
  const saved = { ...process.env };
  beforeAll(() => {
    Object.assign(process.env, { TABLE_NAME: 't', BUCKET_NAME: 'b', ALLOW_LOOPBACK_FETCH: 'false' });
    resetConfig();
  });
  afterAll(() => {
    process.env = saved;
    resetConfig();
  });

  it.each(['ftp://example.com/', 'file:///etc/passwd', 'http://user:pw@example.com/', 'http://169.254.169.254/', 'http://[::ffff:10.0.0.1]/', 'not a url'])(
    'refuses %s',
    (url) => {
      expect(() => checkUrlShape(url)).toThrow(EgressRefusedError);
    },
  );

  it('accepts a public http(s) URL without resolving it', () => {
    expect(checkUrlShape('https://example.com/a').hostname).toBe('example.com');
  });
});
