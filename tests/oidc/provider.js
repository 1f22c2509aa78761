// A real OpenID Connect provider (panva's oidc-provider) for the sign-in tests, on 127.0.0.1 only.
// Usage: node provider.js PORT REDIRECT_URI ACCOUNTS_JSON
//   ACCOUNTS_JSON: {"<login>": {"email": "...", "groups": ["evalsite:acme/search:curator", ...]}, ...}
// The library's own development interactions sign anyone in by login name (the password is not checked) and ask
// for consent: the tests drive those forms as a browser would. Prints "ready <issuer>" once it listens.
import Provider from "oidc-provider";

const [port, redirectUri, accountsJson] = process.argv.slice(2);
const accounts = JSON.parse(accountsJson);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: "evalsite",
      client_secret: "evalsite-test-secret",
      redirect_uris: [redirectUri],
      response_types: ["code"],
      grant_types: ["authorization_code"],
      token_endpoint_auth_method: "client_secret_post",
    },
  ],
  pkce: { required: () => true },
  claims: { openid: ["sub"], email: ["email"], profile: ["preferred_username"], groups: ["groups"] },
  scopes: ["openid", "email", "profile", "groups"],
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, sub) {
    const account = accounts[sub];
    if (!account) return undefined;
    return {
      accountId: sub,
      async claims() {
        return { sub, preferred_username: sub, email: account.email, groups: account.groups };
      },
    };
  },
  // The tests change an account's groups between two sign-ins: read them fresh from this file each time.
  ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 600, Grant: 600 },
});
provider.proxy = false;

process.on("SIGTERM", () => process.exit(0));
process.stdin.on("data", (chunk) => {
  // a line of JSON on stdin replaces the accounts (a group removed at the IdP, say)
  Object.assign(accounts, JSON.parse(chunk.toString()));
});

provider.listen(Number(port), "127.0.0.1", () => {
  console.log(`ready ${issuer}`);
});
