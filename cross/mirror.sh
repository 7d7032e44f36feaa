#!/bin/sh
# cross/mirror.sh: prints the Debian package mirror this machine's apt uses (the URI of its first source for
# the main archive, not the security one), so that debootstrap and the cross sysroot fetch from the same place
# as `apt-get` does: a lab behind its own mirror needs nothing more. DEBIAN_MIRROR overrides it.
# Reads /etc/apt/sources.list and the one-line (.list) and deb822 (.sources) files in sources.list.d.
# Exits 1, saying what to set, when no source is found (a machine that is not Debian, or has no apt sources).
set -eu
if [ -n "${DEBIAN_MIRROR:-}" ]; then echo "$DEBIAN_MIRROR"; exit 0; fi
etc=${APT_ETC:-/etc/apt}
uri=$(
  {
    # one-line format: deb [options] URI SUITE COMPONENT...
    for f in "$etc/sources.list" "$etc"/sources.list.d/*.list; do
      [ -r "$f" ] || continue
      sed -n 's/^[[:space:]]*deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]\{1,\}\)[[:space:]]\{1,\}\([^[:space:]]\{1,\}\).*/\2 \3/p' "$f"
    done
    # deb822 format: stanzas separated by blank lines; an Enabled: no stanza is skipped
    for f in "$etc"/sources.list.d/*.sources; do
      [ -r "$f" ] || continue
      awk 'function flush() { if (deb && on && uris != "") { n = split(uris, u, " "); split(suites, s, " "); for (i = 1; i <= n; i++) print u[i], s[1] } deb = 0; on = 1; uris = ""; suites = "" }
           BEGIN { on = 1 }
           /^[[:space:]]*#/ { next }
           /^[[:space:]]*$/ { flush(); next }
           tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
           tolower($1) == "enabled:" { on = (tolower($2) != "no") }
           tolower($1) == "uris:" { uris = ""; for (i = 2; i <= NF; i++) uris = uris " " $i }
           tolower($1) == "suites:" { suites = ""; for (i = 2; i <= NF; i++) suites = suites " " $i }
           END { flush() }' "$f"
    done
  } | awk '$1 ~ /^(https?|file):/ && $2 !~ /-security$/ && $2 !~ /\/updates$/ { sub(/\/+$/, "", $1); print $1; exit }'
)
if [ -z "$uri" ]; then
  echo "mirror.sh: no Debian source in $etc/sources.list or $etc/sources.list.d: set DEBIAN_MIRROR to your mirror's URL" >&2
  exit 1
fi
echo "$uri"
