// A real OpenID provider on 127.0.0.1 for the sign-in tests (tests/e2e/test_oidc.py).
//
// `node provider.js CONFIG.json`, where the file says
//   {"port": 4000, "clients": [{client_id, client_secret, redirect_uris}],
//    "accounts": {"<login>": {"email": "...", "email_verified": true}}}
// Its sign-in page is oidc-provider's own (any password); an unknown login is refused
// by the provider. It prints "ready <issuer>" once it listens.
import { readFileSync } from "node:fs";
import Provider from "oidc-provider";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const issuer = `http://127.0.0.1:${config.port}`;

const provider = new Provider(issuer, {
  clients: config.clients.map((c) => ({
    grant_types: ["authorization_code"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_basic",
    ...c,
  })),
  claims: { openid: ["sub"], email: ["email", "email_verified"], profile: ["name"] },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
  async findAccount(ctx, id) {
    const account = config.accounts[id];
    if (!account) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, ...account };
      },
    };
  },
  // First-party: the consent screen is skipped, as a team's own provider does for its apps.
  async loadExistingGrant(ctx) {
    const grant = new ctx.oidc.provider.Grant({
      clientId: ctx.oidc.client.clientId,
      accountId: ctx.oidc.session.accountId,
    });
    grant.addOIDCScope("openid email profile");
    grant.addOIDCClaims(["email", "email_verified", "name"]);
    await grant.save();
    return grant;
  },
});

provider.listen(config.port, "127.0.0.1", () => {
  console.log(`ready ${issuer}`);
});
