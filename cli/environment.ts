// Imported first by the CLI: the AWS SDK warns on every Node 20 process that newer SDK releases will need
// Node 22. Sendproof pins SDK versions that support Node 20, so the warning is noise for a CLI user.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
