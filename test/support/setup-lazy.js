// The acceptance tier runs the API as the Lambda bundles do (lib/bundle.ts defines VAP_LAZY_MODULES):
// modules used on some paths only, such as the phone rules, load on first use, so a code path that
// would need them synchronously fails here as it would in AWS.
process.env.VAP_LAZY_MODULES = 'true';
