"""Example upstream MCP server: weather, forecasts, air quality and alerts (a deterministic fake keyed on the city)."""

import hashlib
import math
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Literal, get_args

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

try:
    from ._common import configure_logging, make_parser, serve
except ImportError:  # run as a script: python examples/servers/weather_server.py
    from _common import configure_logging, make_parser, serve  # type: ignore[no-redef]

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=True)
Condition = Literal["clear", "partly_cloudy", "cloudy", "fog", "drizzle", "rain", "thunderstorm", "snow"]
Severity = Literal["minor", "moderate", "severe", "extreme"]
Pollutant = Literal["pm2_5", "pm10", "o3", "no2", "so2", "co"]
MoonPhase = Literal[
    "new",
    "waxing_crescent",
    "first_quarter",
    "waxing_gibbous",
    "full",
    "waning_gibbous",
    "last_quarter",
    "waning_crescent",
]
CONDITIONS: tuple[Condition, ...] = get_args(Condition)
SEVERITIES: tuple[Severity, ...] = get_args(Severity)
POLLUTANTS: tuple[Pollutant, ...] = get_args(Pollutant)
PHASES: tuple[MoonPhase, ...] = get_args(MoonPhase)
COMPASS = ("N", "NE", "E", "SE", "S", "SW", "W", "NW")
NEW_MOON, LUNAR_MONTH = date(2000, 1, 6), 29.530588  # a known new moon; mean synodic month in days
ALERT_KINDS = ("Thunderstorm warning", "Heat advisory", "Flood watch", "High wind warning", "Coastal flood warning")
# name: (country, latitude, longitude, timezone, mean temperature in C)
KNOWN = {
    "London": ("GB", 51.5072, -0.1276, "Europe/London", 11.0),
    "Paris": ("FR", 48.8566, 2.3522, "Europe/Paris", 12.5),
    "Berlin": ("DE", 52.52, 13.405, "Europe/Berlin", 10.0),
    "New York": ("US", 40.7128, -74.006, "America/New_York", 13.0),
    "San Francisco": ("US", 37.7749, -122.4194, "America/Los_Angeles", 14.5),
    "Tokyo": ("JP", 35.6762, 139.6503, "Asia/Tokyo", 16.0),
    "Sydney": ("AU", -33.8688, 151.2093, "Australia/Sydney", 18.0),
    "Reykjavik": ("IS", 64.1466, -21.9426, "Atlantic/Reykjavik", 5.0),
    "Cairo": ("EG", 30.0444, 31.2357, "Africa/Cairo", 22.5),
    "Mumbai": ("IN", 19.076, 72.8777, "Asia/Kolkata", 27.5),
}

Units = Annotated[Literal["metric", "imperial"], Field(description="metric: C, km/h, mm; imperial: F, mph, in.")]
City = Annotated[str, Field(min_length=1, max_length=100, description="City name, e.g. 'Paris' or 'New York'.")]
CountryCode = Annotated[
    str | None, Field(pattern=r"^[A-Z]{2}$", description="ISO 3166-1 alpha-2 country code to disambiguate, e.g. 'FR'.")
]


class Location(BaseModel):
    name: str
    country: str
    latitude: float
    longitude: float
    timezone: str


class CurrentWeather(BaseModel):
    location: Location
    observed_at: datetime
    units: str
    condition: Condition
    temperature: float
    feels_like: float
    humidity_percent: int
    wind_speed: float
    wind_direction: str
    pressure_hpa: int


class DailyForecast(BaseModel):
    date: date
    condition: Condition
    high: float
    low: float
    precipitation_chance_percent: int
    precipitation: float
    hourly_temperatures: list[float] | None = None


class Forecast(BaseModel):
    location: Location
    units: str
    days: list[DailyForecast]


class AirQuality(BaseModel):
    location: Location
    aqi: int
    category: str
    dominant_pollutant: Pollutant
    concentrations_ug_m3: dict[str, float]


class Alert(BaseModel):
    id: str
    severity: Severity
    event: str
    headline: str
    starts: datetime
    ends: datetime


class Astronomy(BaseModel):
    location: Location
    date: date
    sunrise_utc: str | None
    sunset_utc: str | None
    day_length_hours: float
    moon_phase: MoonPhase


def _num(*key: object, lo: float = 0.0, hi: float = 1.0) -> float:
    """A stable number in [lo, hi) derived from the key: the same key always gives the same value."""
    digest = hashlib.sha256("|".join(str(k).lower() for k in key).encode()).digest()
    return lo + (hi - lo) * int.from_bytes(digest[:8], "big") / 2**64


def _locate(city: str, country_code: str | None = None) -> Location:
    for name, (country, lat, lon, tz, _) in KNOWN.items():
        if name.lower() == city.strip().lower() and country_code in (None, country):
            return Location(name=name, country=country, latitude=lat, longitude=lon, timezone=tz)
    lat, lon = round(_num(city, "lat", lo=-60, hi=70), 4), round(_num(city, "lon", lo=-180, hi=180), 4)
    offset = -round(lon / 15)  # Etc/GMT names count the other way: Etc/GMT-2 is UTC+2
    tz = f"Etc/GMT{offset:+d}" if offset else "Etc/GMT"
    return Location(name=city.strip().title(), country=country_code or "ZZ", latitude=lat, longitude=lon, timezone=tz)


def _mean_temperature(loc: Location) -> float:
    known = KNOWN.get(loc.name)
    return known[4] if known else round(28 - abs(loc.latitude) * 0.35, 1)


def _temp(celsius: float, units: str) -> float:
    return round(celsius * 9 / 5 + 32 if units == "imperial" else celsius, 1)


def _day(loc: Location, day: date, units: str, hourly: bool = False) -> DailyForecast:
    seasonal = 8 * math.cos(2 * math.pi * (day.timetuple().tm_yday - 200) / 365) * (1 if loc.latitude >= 0 else -1)
    high = _mean_temperature(loc) + seasonal + _num(loc.name, day, "high", lo=0, hi=7)
    low = high - _num(loc.name, day, "spread", lo=4, hi=11)
    condition = CONDITIONS[int(_num(loc.name, day, "sky", hi=len(CONDITIONS)))]
    if condition == "snow" and low > 1:
        condition = "rain"
    wet = CONDITIONS.index(condition) >= 4
    rain_mm = round(_num(loc.name, day, "mm", lo=0.5, hi=18), 1) if wet else 0.0
    curve = [round(low + (high - low) * (1 - math.cos(math.pi * max(0, h - 5) / 10)) / 2, 1) for h in range(24)]
    chance = _num(loc.name, day, "pop", lo=55, hi=100) if wet else _num(loc.name, day, "pop", hi=30)
    return DailyForecast(
        date=day,
        condition=condition,
        high=_temp(high, units),
        low=_temp(low, units),
        precipitation_chance_percent=int(chance),
        precipitation=round(rain_mm / 25.4, 2) if units == "imperial" else rain_mm,
        hourly_temperatures=[_temp(t, units) for t in curve] if hourly else None,
    )


def build_server() -> MCPServer:
    """A weather server; it holds no state, so every call is a pure function of its arguments (and today's date)."""
    server = MCPServer("weather", instructions="Weather conditions, forecasts, air quality and alerts for any city.")

    @server.tool(annotations=READ_ONLY)
    async def get_current_weather(
        city: City, country_code: CountryCode = None, units: Units = "metric"
    ) -> CurrentWeather:
        """Get the current conditions in a city: temperature, wind, humidity and pressure."""
        loc, now = _locate(city, country_code), datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
        today = _day(loc, now.date(), "metric")
        temp = (today.high + today.low) / 2
        wind = _num(loc.name, "wind", lo=3, hi=38)
        return CurrentWeather(
            location=loc,
            observed_at=now,
            units=units,
            condition=today.condition,
            temperature=_temp(temp, units),
            feels_like=_temp(temp - wind / 10, units),
            humidity_percent=int(_num(loc.name, "rh", lo=35, hi=95)),
            wind_speed=round(wind / 1.609 if units == "imperial" else wind, 1),
            wind_direction=COMPASS[int(_num(loc.name, "dir", hi=8))],
            pressure_hpa=int(_num(loc.name, "hpa", lo=990, hi=1030)),
        )

    @server.tool(annotations=READ_ONLY)
    async def get_forecast(
        city: City,
        days: Annotated[int, Field(ge=1, le=14, description="Number of days to forecast, starting today.")] = 3,
        units: Units = "metric",
        include_hourly: Annotated[bool, Field(description="Add 24 hourly temperatures to each day.")] = False,
    ) -> Forecast:
        """Get a daily weather forecast for a city for up to 14 days, optionally with hourly temperatures."""
        loc, today = _locate(city), datetime.now(UTC).date()
        return Forecast(
            location=loc,
            units=units,
            days=[_day(loc, today + timedelta(days=i), units, include_hourly) for i in range(days)],
        )

    @server.tool(annotations=READ_ONLY)
    async def get_historical_weather(
        city: City,
        date: Annotated[date, Field(description="Past date to look up, in YYYY-MM-DD format.")],
        units: Units = "metric",
    ) -> DailyForecast:
        """Get the observed high, low, conditions and precipitation in a city on a past date."""
        if date >= datetime.now(UTC).date():
            raise ToolError(f"{date} is not in the past; use get_forecast for today and later.")
        if date.year < 1950:
            raise ToolError("Records start on 1950-01-01.")
        return _day(_locate(city), date, units)

    @server.tool(annotations=READ_ONLY)
    async def get_air_quality(
        city: City,
        pollutants: Annotated[Sequence[Pollutant], Field(description="Pollutants to report; all when empty.")] = (),
    ) -> AirQuality:
        """Get the air quality index, its category and pollutant concentrations for a city."""
        loc = _locate(city)
        levels = {p: round(_num(loc.name, p, lo=2, hi=90), 1) for p in POLLUTANTS}
        aqi = int(max(levels["pm2_5"] * 2.2, levels["o3"] * 1.1))
        bands = ((50, "good"), (100, "moderate"), (150, "unhealthy_for_sensitive_groups"), (200, "unhealthy"))
        category = next((name for limit, name in bands if aqi <= limit), "very_unhealthy")
        return AirQuality(
            location=loc,
            aqi=aqi,
            category=category,
            dominant_pollutant=max(levels, key=levels.__getitem__),
            concentrations_ug_m3={p: v for p, v in levels.items() if not pollutants or p in pollutants},
        )

    @server.tool(annotations=READ_ONLY)
    async def get_weather_alerts(
        city: City,
        min_severity: Annotated[Severity, Field(description="Leave out alerts below this severity.")] = "minor",
    ) -> list[Alert]:
        """List active weather warnings for a city, such as storms, heat or flooding, at or above a severity."""
        loc, start = _locate(city), datetime.now(UTC).replace(hour=6, minute=0, second=0, microsecond=0)
        alerts = []
        for i in range(int(_num(loc.name, "alerts", hi=3))):
            kind = ALERT_KINDS[int(_num(loc.name, i, "kind", hi=len(ALERT_KINDS)))]
            severity = SEVERITIES[int(_num(loc.name, i, "severity", hi=len(SEVERITIES)))]
            alerts.append(
                Alert(
                    id=f"{loc.country}-{int(_num(loc.name, i, 'id', hi=1e6)):06d}",
                    severity=severity,
                    event=kind,
                    headline=f"{kind} for {loc.name} ({severity})",
                    starts=start + timedelta(hours=6 * i),
                    ends=start + timedelta(hours=6 * i + 18),
                )
            )
        return [a for a in alerts if SEVERITIES.index(a.severity) >= SEVERITIES.index(min_severity)]

    @server.tool(annotations=READ_ONLY)
    async def geocode_location(
        query: Annotated[str, Field(min_length=2, description="Place name or part of one, e.g. 'san fran'.")],
        limit: Annotated[int, Field(ge=1, le=10, description="Maximum number of places to return.")] = 5,
    ) -> list[Location]:
        """Find places matching a name and return their country, coordinates and timezone."""
        hits = [_locate(name) for name in KNOWN if query.strip().lower() in name.lower()]
        return (hits or [_locate(query)])[:limit]

    @server.tool(annotations=READ_ONLY)
    async def get_astronomy(
        city: City,
        date: Annotated[date | None, Field(description="Date in YYYY-MM-DD format; today when omitted.")] = None,
    ) -> Astronomy:
        """Get sunrise, sunset, day length and moon phase for a city on a date."""
        loc, when = _locate(city), date or datetime.now(UTC).date()
        decl = math.radians(23.44) * math.sin(2 * math.pi * (when.timetuple().tm_yday - 81) / 365)
        cos_h = -math.tan(math.radians(loc.latitude)) * math.tan(decl)
        hours = 24.0 if cos_h < -1 else 0.0 if cos_h > 1 else 2 * math.degrees(math.acos(cos_h)) / 15
        noon = 12 - loc.longitude / 15

        def clock(h: float) -> str | None:
            return None if hours in (0.0, 24.0) else f"{int(h % 24):02d}:{int(h % 1 * 60):02d}"

        age = (when - NEW_MOON).days % LUNAR_MONTH
        return Astronomy(
            location=loc,
            date=when,
            sunrise_utc=clock(noon - hours / 2),
            sunset_utc=clock(noon + hours / 2),
            day_length_hours=round(hours, 2),
            moon_phase=PHASES[int(age / LUNAR_MONTH * 8 + 0.5) % 8],
        )

    return server


def main() -> None:
    args = make_parser(__doc__).parse_args()
    configure_logging(args.log_level)
    serve(build_server(), args)


if __name__ == "__main__":
    main()
