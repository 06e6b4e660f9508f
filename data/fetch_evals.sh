#!/usr/bin/env bash
# Fetches the public evaluation sets that bin/eval --pairs, --cloze and
# --choice read (docs/evals.md), for users with a network, into data/evals/,
# each file checked against the checksum its source publishes:
#   data/evals/blimp/NAME.jsonl   BLiMP's 67 minimal-pair sets, 1,000 pairs each,
#                                 from github.com/alexwarstadt/blimp (pinned
#                                 commit; each file's git blob id checked)
#   data/evals/blimp.jsonl        the 67 joined, in name order (67,000 lines)
#   data/evals/lambada_test.txt   LAMBADA's test set in plain text (5,153
#                                 passages), from the original release on
#                                 Zenodo: a 334 MB archive (sha256 checked),
#                                 kept in data/cache/, of which this is one file
#   data/evals/hellaswag_val.jsonl HellaSwag's validation set (10,042 items),
#                                 from github.com/rowanz/hellaswag (pinned
#                                 commit; git blob id checked)
# A file already there and checked is not fetched again. Needs curl. The
# tests never run it (they make small files in these formats).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=data/evals
CACHE=data/cache
BLIMP_URL=https://raw.githubusercontent.com/alexwarstadt/blimp/3e56b06fcabca9b30822fc66435fca6b1aa40bb1/data
HELLASWAG_URL=https://raw.githubusercontent.com/rowanz/hellaswag/a29ff8e9a04bba4bd6588223785ce105328adc57/data/hellaswag_val.jsonl
HELLASWAG_BLOB=0f5ee25d72216f12317d5d8a7b92deafa423d81e
LAMBADA_URL='https://zenodo.org/records/2630551/files/lambada-dataset.tar.gz?download=1'
LAMBADA_SHA256=8fbe499096ddbdcbbd0cac406861b5026fb451d15b8fe04e0e4f3d082f2ad5d7

fail() {
    echo "fetch_evals: error: $*" >&2
    exit 2
}
command -v curl >/dev/null || fail "curl is needed to download (e.g. apt-get install curl)"

# The checksum of a file: its git blob id (what a repository's tree records:
# SHA-1 of "blob SIZE\0" and the bytes) or its sha256.
checksum() { # KIND FILE
    if [ "$1" = blob ]; then { printf 'blob %s\0' "$(wc -c <"$2" | tr -d ' ')"; cat "$2"; } | sha1sum | cut -d' ' -f1
    else sha256sum "$2" | cut -d' ' -f1; fi
}

# Downloads URL into FILE unless FILE is there with the checksum; a download
# whose checksum differs is removed and refused.
fetch() { # URL FILE KIND CHECKSUM
    local url=$1 file=$2 kind=$3 want=$4 got
    [ -s "$file" ] && [ "$(checksum "$kind" "$file")" = "$want" ] && return 0
    echo "fetching $url"
    curl -fsSL --retry 3 -o "$file.tmp" "$url" || { rm -f "$file.tmp"; fail "could not download $url (is the network reachable?)"; }
    got=$(checksum "$kind" "$file.tmp")
    [ "$got" = "$want" ] || { rm -f "$file.tmp"; fail "$url: $kind checksum $got, expected $want"; }
    mv "$file.tmp" "$file"
}

lines() { # FILE N: FILE has N lines, or the fetch failed
    local n
    n=$(wc -l <"$1" | tr -d ' ')
    [ "$n" = "$2" ] || fail "$1 has $n lines, expected $2"
}

mkdir -p "$OUT/blimp" "$CACHE"
# BLiMP: each phenomenon's git blob id at the pinned commit.
while read -r blob name; do
    fetch "$BLIMP_URL/$name.jsonl" "$OUT/blimp/$name.jsonl" blob "$blob"
done <<'LIST'
e2b90a7a52ce5814147eaa9d3ab1695d4945ee99 adjunct_island
c0bcabdf757ee96f2b16642525899a09e341a352 anaphor_gender_agreement
60f2e3ae7e31db6cc39bbeaa2d617b053294a54e anaphor_number_agreement
b2acb4f13b386cc6a36a0fcd8e050097f485e89d animate_subject_passive
1b79d6675f46fd726ffd01be674bb489a05db6cd animate_subject_trans
9d87193e8bb03a093ada2139cce5c54a65c53442 causative
6408fc3f99912adbd07ddec9bd5516485b541f8b complex_NP_island
9886be5fd29d272ff565aafc4318877cee6f5d6e coordinate_structure_constraint_complex_left_branch
34ee9af2a53a5d61bf60043db1085acb856a131d coordinate_structure_constraint_object_extraction
0371d50db2793a9c8e8c595b03bde41f5005a931 determiner_noun_agreement_1
daaee047ecdea0461f61a8c03613c6359b15ba21 determiner_noun_agreement_2
e22a3bae2e76d1cea652749885d3c70833dc89d0 determiner_noun_agreement_irregular_1
82a76cb1f6227c747bf70e37b8552c78de48908c determiner_noun_agreement_irregular_2
c4a4bc8855f504a09a4540190c3d2257392782f4 determiner_noun_agreement_with_adj_2
127e2b39eca536856a836eb7f3964273196b8ba3 determiner_noun_agreement_with_adj_irregular_1
1512082143089483185a59a9f8a86c339ff923ba determiner_noun_agreement_with_adj_irregular_2
d88783ab29047e41857b6a0c01c84bcfb3a06c80 determiner_noun_agreement_with_adjective_1
d454cd7d6b293866b427b6759b88fbb8b9c646bf distractor_agreement_relational_noun
ebc95e27000b7febd42c85151de1cb4a3aa33054 distractor_agreement_relative_clause
9248308b2de7c3908b5a11182ff031d17cd70ba2 drop_argument
7993468a2e4947682892753209e2564dbd18a01b ellipsis_n_bar_1
8ff2575169766be19f0c48f8679a5379c83c34ce ellipsis_n_bar_2
c5e5e6b58bc761f518e7a1d341fd93df343f50cf existential_there_object_raising
7708d54c4c92def643c3bdab7a71b2a9ae82e96b existential_there_quantifiers_1
57c9a8f229f5db072f995f124e776b1dd4af6c0b existential_there_quantifiers_2
32df72bb2ab132e7413a4ef3b3123fddee48af82 existential_there_subject_raising
dc931799d641384ec9b2d77f7f9a4fecb4234ada expletive_it_object_raising
ee4957baf1bdf2b66ca724e34c7a656516679cf4 inchoative
4f5b4ec58f621ebe4156e262ecf829f0547122fc intransitive
59833aff857d635689685ffc699d4c8d5560c396 irregular_past_participle_adjectives
89f57d5a7513ef1577ff4bc7533948320fb8130d irregular_past_participle_verbs
99a06c91da16d40695e3cfadeef69609b8e6e992 irregular_plural_subject_verb_agreement_1
1065055efd751d24dd998cb2c271870f0bace652 irregular_plural_subject_verb_agreement_2
f2536d74b3008ee6332eaeb442a76a4c84ea37b7 left_branch_island_echo_question
6902f226eeed8eae5e24c238bd25a7ade66abd2e left_branch_island_simple_question
372695783155b6be601751255be7fd3840fdbfef matrix_question_npi_licensor_present
eccaaa35995ac0ead2751ab6df109d67a9fd20c5 npi_present_1
4e4d11b474504779250155b6839e76f6fc2b8726 npi_present_2
bd139697bb55a7abc12a49e46394d34b1108e34a only_npi_licensor_present
98a10ffd68a29734ce5376447af6dc00a8e990d8 only_npi_scope
9df36a61ba48c6c05c26d01be61a942b75b49ffa passive_1
50fcbbeeb0ca3708519fb895321462f3930dcaaf passive_2
0e46a2789c757a953f883206eb1108edcff6767d principle_A_c_command
5e05bff424927ea25bbad964ff2df179f2103186 principle_A_case_1
8bac97358facd764da1871d5fbc6517565ea2817 principle_A_case_2
9e31850a1ae2055c836614a0a8be2cda9cfd2ac9 principle_A_domain_1
df9915a6222d3a76b01d9c3dfb2056a7dcebacb7 principle_A_domain_2
33ece70082af14e769e78d81a1548067cdeb8a26 principle_A_domain_3
9ca5bffa24dbffde4d896a17fc904d9b5714938c principle_A_reconstruction
846083500c7e341c24c1f7411aa624de85f148bb regular_plural_subject_verb_agreement_1
a0a39113346823981537f4bbdd4635c87eaed1e5 regular_plural_subject_verb_agreement_2
6d27d60a10711924ed106ce324af16bd1b04e6f6 sentential_negation_npi_licensor_present
ad979d7cf8a7c946bd55c1fd42609555663637f6 sentential_negation_npi_scope
adda829c23e32f65d5d74d406c77859dc93c4242 sentential_subject_island
6ca9e29eb5e6047c6ec4265d72bf0fd72cdc9541 superlative_quantifiers_1
7288ec731732ec3da5dab96dac98a618cd60de68 superlative_quantifiers_2
13ef8df91ca9ef388a78e805734062dfe117b708 tough_vs_raising_1
d0cf2001774939217a00c0807e43eb64076f490c tough_vs_raising_2
6c97f105c0ddeaf86acc436058e659b4e900c14d transitive
e182b245c882cc6709a6a7b5aad3d368550f68ff wh_island
f282de6e19c294dd3039e5f54a595e9a40ce5c0b wh_questions_object_gap
141d6dfcac81ff1dee269a1e89043b0866c3199d wh_questions_subject_gap
af9a2c140a416be92e26239e75cbb7bd1a819555 wh_questions_subject_gap_long_distance
b797147fa995e35c6c98149009d508660b32b64f wh_vs_that_no_gap
cc30f0bfa2d7814b6fc1f0f626d3c1d7ef93a025 wh_vs_that_no_gap_long_distance
e5e459e0c66731e1a19366fc300b97972cf1472d wh_vs_that_with_gap
427efae86505aba8cd3926bb4a9d6e3a6b4c81a6 wh_vs_that_with_gap_long_distance
LIST
LC_ALL=C cat "$OUT"/blimp/*.jsonl >"$OUT/blimp.jsonl.tmp"
mv "$OUT/blimp.jsonl.tmp" "$OUT/blimp.jsonl"
lines "$OUT/blimp.jsonl" 67000

fetch "$HELLASWAG_URL" "$OUT/hellaswag_val.jsonl" blob "$HELLASWAG_BLOB"
lines "$OUT/hellaswag_val.jsonl" 10042

if [ ! -s "$OUT/lambada_test.txt" ]; then
    fetch "$LAMBADA_URL" "$CACHE/lambada-dataset.tar.gz" sha256 "$LAMBADA_SHA256"
    tar -xzOf "$CACHE/lambada-dataset.tar.gz" --wildcards '*lambada_test_plain_text.txt' >"$OUT/lambada_test.txt.tmp" ||
        fail "no lambada_test_plain_text.txt in $CACHE/lambada-dataset.tar.gz"
    mv "$OUT/lambada_test.txt.tmp" "$OUT/lambada_test.txt"
fi
lines "$OUT/lambada_test.txt" 5153

echo "data/evals: blimp.jsonl (67,000 pairs), lambada_test.txt (5,153 passages), hellaswag_val.jsonl (10,042 items)"
echo "score them: bin/eval --model CKPT --pairs $OUT/blimp.jsonl --cloze $OUT/lambada_test.txt --choice $OUT/hellaswag_val.jsonl"
