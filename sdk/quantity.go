package sdk

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/bits"
	"strconv"
	"strings"
)

// Quantity is a Kubernetes quantity ("100Mi", "0.5", "250m", "1e3") in a
// plugin's config. It parses, rounds and prints exactly as
// k8s.io/apimachinery's resource.Quantity does (the SDK's tests hold the two
// to agreement over a wide table and a fuzzer), without linking
// apimachinery into every plugin. The zero value is 0.
//
// A Quantity is immutable; compare two with Cmp, not ==.
type Quantity struct {
	// The value is unscaled × 10^exponent, exactly. A nil unscaled is 0.
	unscaled *big.Int
	exponent int64
	format   quantityFormat
	// text is the string the quantity was parsed from, kept when that
	// string already is in canonical form: apimachinery prints it back
	// verbatim then, and so does String.
	text string
}

// quantityFormat is how a quantity prints, remembered from its suffix.
type quantityFormat uint8

const (
	decimalSI       quantityFormat = iota // 12M, 12k, 12m
	binarySI                              // 12Mi (12 × 2^20)
	decimalExponent                       // 12e6
)

// Precision limits of apimachinery's parser: at most this many decimal
// digits take its int64 fast path, and no quantity is finer than 10^-9.
const (
	maxInt64Digits = 18
	nanoExponent   = -9
)

var (
	bigTen     = big.NewInt(10)
	big1024    = big.NewInt(1024)
	bigMaxInt  = big.NewInt(math.MaxInt64)
	bigMinInt  = big.NewInt(math.MinInt64)
	decimalSIs = map[int64]string{-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
	binarySIs  = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
)

// quantityGrammar is what a quantity looks like, for error messages.
const quantityGrammar = `a number with an optional sign, fraction and suffix ` +
	`(n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei, or an exponent such as e3)`

// ParseQuantity parses s as resource.ParseQuantity does: values finer than
// 1n round up (away from zero) to 1n, and binary-suffixed values are capped
// at 2^63-1.
func ParseQuantity(s string) (Quantity, error) {
	if s == "" {
		return Quantity{}, fmt.Errorf("expected a quantity such as \"100Mi\", got an empty string")
	}
	n, err := scanQuantity(s)
	if err != nil {
		return Quantity{}, err
	}
	base, exponent, format, ok := interpretSuffix(n.suffix)
	if !ok {
		return Quantity{}, fmt.Errorf("invalid quantity %q: unknown suffix %q; expected %s", s, n.suffix, quantityGrammar)
	}

	digits := n.integer + n.fraction
	unscaled, _ := new(big.Int).SetString(digits, 10) // digits only, never empty
	exp := -int64(len(n.fraction))
	if base == 10 {
		exp += int64(exponent)
	} else {
		unscaled.Lsh(unscaled, uint(exponent))
	}
	if n.negative {
		unscaled.Neg(unscaled)
	}
	q := Quantity{unscaled: unscaled, exponent: exp, format: format}

	canonical, fast := fastPath(n, base, exponent)
	if fast {
		// apimachinery's int64 path: exact as it stands, and its string is
		// kept when already canonical.
		if canonical {
			q.text = s
		}
		return q, nil
	}
	if !n.hasDigits {
		return Quantity{}, fmt.Errorf("invalid quantity %q: no digits; expected %s", s, quantityGrammar)
	}
	q.roundUpToNano()
	if format == binarySI {
		q.capMagnitude()
		if q.cmpAbs(1) < 0 && q.Sign() != 0 {
			q.format = decimalSI // below 1 a binary suffix cannot be printed
		}
	}
	return q, nil
}

// MustParseQuantity parses s or panics; for defaults.
func MustParseQuantity(s string) Quantity {
	q, err := ParseQuantity(s)
	if err != nil {
		panic(err)
	}
	return q
}

// BinaryQuantity is n as resource.NewQuantity(n, resource.BinarySI): it
// prints with a binary suffix when one divides it ("80Mi", "83886081"), in
// decimal form below 1024 ("1k"). The kubelet prints bytes this way.
func BinaryQuantity(n int64) Quantity { return Quantity{unscaled: big.NewInt(n), format: binarySI} }

// DecimalQuantity is n as resource.NewQuantity(n, resource.DecimalSI):
// "50k", "1500". The kubelet prints counts (inodes, processes) this way.
func DecimalQuantity(n int64) Quantity { return Quantity{unscaled: big.NewInt(n), format: decimalSI} }

// scannedQuantity is a quantity string split into its parts.
type scannedQuantity struct {
	negative bool
	// integer is the integer part without leading zeros, "0" when none is
	// left; fraction is the part after the point, possibly empty.
	integer, fraction string
	suffix            string
	// hasDigits is false for a number part of only a sign and a point.
	hasDigits bool
}

// scanQuantity splits s into sign, number and suffix, accepting exactly what
// apimachinery's scanner accepts (including "1.", ".5" and a bare sign,
// which is 0).
func scanQuantity(s string) (scannedQuantity, error) {
	var n scannedQuantity
	pos := 0
	if s[0] == '-' || s[0] == '+' {
		n.negative = s[0] == '-'
		pos++
	}
	start := pos
	for pos < len(s) && s[pos] == '0' {
		pos++
	}
	n.hasDigits = pos > start
	intStart := pos
	for pos < len(s) && isDigit(s[pos]) {
		pos++
	}
	n.integer = s[intStart:pos]
	if pos < len(s) && s[pos] == '.' {
		pos++
		fracStart := pos
		for pos < len(s) && isDigit(s[pos]) {
			pos++
		}
		n.fraction = s[fracStart:pos]
	}
	n.hasDigits = n.hasDigits || n.integer != "" || n.fraction != ""
	if n.integer == "" {
		n.integer = "0"
	}
	suffixStart := pos
	for pos < len(s) && strings.IndexByte("eEinumkKMGTP", s[pos]) >= 0 {
		pos++
	}
	if pos < len(s) && (s[pos] == '-' || s[pos] == '+') {
		pos++
	}
	for pos < len(s) && isDigit(s[pos]) {
		pos++
	}
	if pos < len(s) {
		return n, fmt.Errorf("invalid quantity %q: unexpected %q at offset %d; expected %s", s, s[pos:pos+1], pos, quantityGrammar)
	}
	n.suffix = s[suffixStart:]
	return n, nil
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// interpretSuffix returns the base (10 or 2) and exponent a suffix stands
// for. An exponent is truncated to 32 bits as apimachinery does.
func interpretSuffix(suffix string) (base, exponent int32, format quantityFormat, ok bool) {
	for exp, s := range decimalSIs {
		if s == suffix {
			return 10, int32(exp), decimalSI, true
		}
	}
	for i, s := range binarySIs[1:] {
		if s == suffix {
			return 2, int32(10 * (i + 1)), binarySI, true
		}
	}
	if len(suffix) > 1 && (suffix[0] == 'e' || suffix[0] == 'E') {
		parsed, err := strconv.ParseInt(suffix[1:], 10, 64)
		if err != nil {
			return 0, 0, decimalExponent, false
		}
		return 10, int32(parsed), decimalExponent, true
	}
	return 0, 0, decimalExponent, false
}

// fastPath reports whether apimachinery parses n on its int64 path (where it
// neither rounds nor caps, and keeps the input string when canonical) and
// whether it keeps the string.
func fastPath(n scannedQuantity, base, exponent int32) (canonical, fast bool) {
	var precision, scale int64
	mantissa := int64(1)
	if base == 10 {
		precision = maxInt64Digits - int64(len(n.integer)+len(n.fraction))
		scale = int64(exponent)
	} else {
		precision = -1
		if exponent >= 0 && n.fraction == "" {
			mantissa <<= uint(exponent)
			// 2^10 carries about three decimal digits.
			precision = 15 - int64(len(n.integer)) - int64(exponent)*3/10 - 1
		}
	}
	scale -= int64(len(n.fraction))
	if precision < 0 || scale < nanoExponent {
		return false, false
	}
	shifted := n.integer + n.fraction
	value, err := strconv.ParseInt(shifted, 10, 64)
	if err != nil {
		return false, false
	}
	if hi, lo := bits.Mul64(uint64(value), uint64(mantissa)); hi != 0 || lo > math.MaxInt64 {
		return false, false
	}
	if base == 2 {
		return value&0x07 != 0, true
	}
	return scale%3 == 0 && !strings.HasSuffix(shifted, "000") && shifted[0] != '0', true
}

// roundUpToNano rounds a value finer than 10^-9 away from zero to 10^-9.
func (q *Quantity) roundUpToNano() {
	if q.exponent >= nanoExponent || q.unscaled.Sign() == 0 {
		return
	}
	q.unscaled = divideAwayFromZero(q.unscaled, nanoExponent-q.exponent)
	q.exponent = nanoExponent
}

// divideAwayFromZero returns x / 10^k rounded away from zero, for k > 0,
// without building 10^k when it exceeds x.
func divideAwayFromZero(x *big.Int, k int64) *big.Int {
	abs := new(big.Int).Abs(x)
	if int64(len(abs.String())) <= k {
		return big.NewInt(int64(x.Sign())) // 0 < |x| < 10^k
	}
	quo, rem := new(big.Int).QuoRem(abs, new(big.Int).Exp(bigTen, big.NewInt(k), nil), new(big.Int))
	if rem.Sign() != 0 {
		quo.Add(quo, big.NewInt(1))
	}
	if x.Sign() < 0 {
		quo.Neg(quo)
	}
	return quo
}

// capMagnitude limits |q| to 2^63-1, as apimachinery caps binary values.
func (q *Quantity) capMagnitude() {
	if q.exponent > 18 || q.cmpAbs(math.MaxInt64) > 0 {
		sign := q.Sign()
		q.unscaled = new(big.Int).Set(bigMaxInt)
		if sign < 0 {
			q.unscaled.Neg(q.unscaled)
		}
		q.exponent = 0
	}
}

// cmpAbs compares |q| with n ≥ 0.
func (q Quantity) cmpAbs(n int64) int {
	abs := q
	abs.unscaled = new(big.Int).Abs(q.bigUnscaled())
	return abs.Cmp(Quantity{unscaled: big.NewInt(n)})
}

func (q Quantity) bigUnscaled() *big.Int {
	if q.unscaled == nil {
		return new(big.Int)
	}
	return q.unscaled
}

// Sign returns -1, 0 or 1.
func (q Quantity) Sign() int { return q.bigUnscaled().Sign() }

// IsZero reports whether q is 0.
func (q Quantity) IsZero() bool { return q.Sign() == 0 }

// Cmp returns -1, 0 or 1 as q is less than, equal to or greater than other.
func (q Quantity) Cmp(other Quantity) int {
	if s, o := q.Sign(), other.Sign(); s != o || s == 0 {
		return cmpInt(s, o)
	}
	return q.Sign() * cmpMagnitude(q, other)
}

// cmpMagnitude compares |a| and |b|, both non-zero. Orders of magnitude are
// compared first, so that a huge exponent never turns into a huge power.
func cmpMagnitude(a, b Quantity) int {
	x, y := new(big.Int).Abs(a.unscaled), new(big.Int).Abs(b.unscaled)
	// 10^(order-1) <= |v| < 10^order
	orderA := int64(len(x.String())) + a.exponent
	orderB := int64(len(y.String())) + b.exponent
	if orderA != orderB {
		return cmpInt64(orderA, orderB)
	}
	// Same order: the exponents differ by no more than the digit counts.
	switch {
	case a.exponent > b.exponent:
		x = scaleUp(x, a.exponent-b.exponent)
	case b.exponent > a.exponent:
		y = scaleUp(y, b.exponent-a.exponent)
	}
	return x.Cmp(y)
}

func cmpInt(a, b int) int { return cmpInt64(int64(a), int64(b)) }

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func scaleUp(x *big.Int, k int64) *big.Int {
	return new(big.Int).Mul(x, new(big.Int).Exp(bigTen, big.NewInt(k), nil))
}

// Value returns q rounded up, away from zero, to a whole number; values
// beyond int64 saturate at its bounds.
func (q Quantity) Value() int64 { return q.scaledValue(0) }

// MilliValue returns q × 1000 rounded up, away from zero, to a whole number;
// values beyond int64 saturate at its bounds.
func (q Quantity) MilliValue() int64 { return q.scaledValue(-3) }

// scaledValue returns q / 10^scale rounded away from zero, saturated.
func (q Quantity) scaledValue(scale int64) int64 {
	x, exp := q.bigUnscaled(), q.exponent-scale
	if x.Sign() == 0 {
		return 0
	}
	if exp < 0 {
		x = divideAwayFromZero(x, -exp)
	} else if exp > 0 {
		if int64(x.BitLen()) > 64 || exp > 19 {
			return saturate(x.Sign())
		}
		x = scaleUp(x, exp)
	}
	if x.Cmp(bigMaxInt) > 0 || x.Cmp(bigMinInt) < 0 {
		return saturate(x.Sign())
	}
	return x.Int64()
}

func saturate(sign int) int64 {
	if sign < 0 {
		return math.MinInt64
	}
	return math.MaxInt64
}

// String prints q in canonical form exactly as apimachinery does: the
// suffix kind it was written with, no fraction, the largest exponent that
// loses nothing ("1.5" is "1500m", "1.5Gi" is "1536Mi").
func (q Quantity) String() string {
	if q.text != "" {
		return q.text
	}
	if q.Sign() == 0 {
		return "0"
	}
	format := q.format
	if format == binarySI {
		if q.cmpAbs(1024) < 0 {
			format = decimalSI // small binary values print in decimal
		} else if integer, exact := q.integer(); exact {
			return base1024String(integer)
		} else {
			format = decimalSI // a fraction cannot print in binary form
		}
	}
	mantissa, exp := q.canonicalDecimal()
	switch format {
	case decimalExponent:
		if exp == 0 {
			return mantissa
		}
		return mantissa + "e" + strconv.FormatInt(exp, 10)
	default:
		// apimachinery prints no suffix for an exponent it has none for
		// (beyond E), and so does this.
		return mantissa + decimalSIs[exp]
	}
}

// integer returns q as a whole number and whether that is exact.
func (q Quantity) integer() (*big.Int, bool) {
	x := q.bigUnscaled()
	if q.exponent >= 0 {
		return scaleUp(x, q.exponent), true
	}
	rounded := divideAwayFromZero(x, -q.exponent)
	back := Quantity{unscaled: rounded}
	return rounded, back.Cmp(q) == 0
}

// canonicalDecimal returns the mantissa and exponent of q with every factor
// of ten moved into the exponent, and the exponent then lowered to a
// multiple of three.
func (q Quantity) canonicalDecimal() (string, int64) {
	x, exp := new(big.Int).Set(q.bigUnscaled()), q.exponent
	quo, rem := new(big.Int), new(big.Int)
	for {
		quo.QuoRem(x, bigTen, rem)
		if rem.Sign() != 0 {
			break
		}
		x.Set(quo)
		exp++
	}
	for exp%3 != 0 {
		x.Mul(x, bigTen)
		exp--
	}
	return x.String(), exp
}

// base1024String prints a whole number with the largest binary suffix that
// divides it.
func base1024String(x *big.Int) string {
	x = new(big.Int).Set(x)
	quo, rem := new(big.Int), new(big.Int)
	i := 0
	for i < len(binarySIs)-1 {
		quo.QuoRem(x, big1024, rem)
		if rem.Sign() != 0 {
			break
		}
		x.Set(quo)
		i++
	}
	return x.String() + binarySIs[i]
}

// UnmarshalJSON accepts "100Mi" or 100.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("expected a quantity such as \"100Mi\", got %s", b)
		}
		s = n.String()
	}
	parsed, err := ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*q = parsed
	return nil
}

// MarshalJSON writes q as its string, "100Mi".
func (q Quantity) MarshalJSON() ([]byte, error) { return json.Marshal(q.String()) }
