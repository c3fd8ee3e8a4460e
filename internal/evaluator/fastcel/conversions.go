package fastcel

import (
	"fmt"
	"math"
	"strconv"
)

// The type conversions string(), int(), double(), bool() and dyn() take
// only the arguments cel-go converts without an error (ConvertToType in
// common/types, v0.29); anything else declines, so that cel-go gives its
// own error. Each is one call: cel-go charges callCost (1).

func conversion(fn string) func(*fx, any) (any, bool) {
	switch fn {
	case "string":
		return toString
	case "int":
		return toInt
	case "double":
		return toDouble
	case "bool":
		return toBool
	case "dyn":
		return func(x *fx, v any) (any, bool) { x.cost++; return v, true }
	}
	return nil
}

func toString(x *fx, v any) (any, bool) {
	x.cost++
	switch v := v.(type) {
	case string:
		return v, true
	case int64:
		return strconv.FormatInt(v, 10), true
	case float64:
		return fmt.Sprintf("%g", v), true
	case bool:
		return strconv.FormatBool(v), true
	}
	return nil, false
}

func toInt(x *fx, v any) (any, bool) {
	x.cost++
	switch v := v.(type) {
	case int64:
		return v, true
	case float64:
		// cel-go's doubleToInt64Checked refuses NaN, the infinities and
		// values outside (MinInt64, MaxInt64); a smaller safe range only
		// declines more often.
		if !(v > -9.2e18 && v < 9.2e18) {
			return nil, false
		}
		return int64(v), true
	case string:
		i, err := strconv.ParseInt(v, 10, 64)
		return i, err == nil
	}
	return nil, false
}

func toDouble(x *fx, v any) (any, bool) {
	x.cost++
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case string:
		d, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(d) {
			// NaN is a double cel-go holds, but it compares unlike
			// anything else: leave it to cel-go.
			return nil, false
		}
		return d, true
	}
	return nil, false
}

func toBool(x *fx, v any) (any, bool) {
	x.cost++
	switch v := v.(type) {
	case bool:
		return v, true
	case string:
		b, err := strconv.ParseBool(v)
		return b, err == nil
	}
	return nil, false
}
