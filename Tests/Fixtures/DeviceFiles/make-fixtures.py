"""Writes the device files the DeviceFiles and import tests read, with encoders we did not write.

FIT files come from fit-tool (PyPI), an independent FIT encoder; each comes with a JSON file of
the values written, which the tests compare with what our decoder reads. Run by `make test`
(target `device-fixtures`) as:  python make-fixtures.py OUTPUT_DIRECTORY
"""
import datetime
import json
import math
import os
import sys

from fit_tool.developer_field import DeveloperField
from fit_tool.endian import Endian
from fit_tool.fit_file_builder import FitFileBuilder
from fit_tool.profile.messages.course_message import CourseMessage
from fit_tool.profile.messages.course_point_message import CoursePointMessage
from fit_tool.profile.messages.developer_data_id_message import DeveloperDataIdMessage
from fit_tool.profile.messages.event_message import EventMessage
from fit_tool.profile.messages.field_description_message import FieldDescriptionMessage
from fit_tool.profile.messages.file_id_message import FileIdMessage
from fit_tool.profile.messages.lap_message import LapMessage
from fit_tool.profile.messages.record_message import RecordMessage
from fit_tool.profile.messages.session_message import SessionMessage
from fit_tool.base_type import BaseType
from fit_tool.profile.profile_type import CoursePoint, Event, EventType, FileType, Manufacturer, Sport

START = datetime.datetime(2026, 11, 20, 7, 2, 11, tzinfo=datetime.timezone.utc)
MILLIS = round(START.timestamp() * 1000)


def iso(millis):
    return datetime.datetime.fromtimestamp(millis / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_file(file_type, manufacturer, product):
    """A builder with the file_id message every FIT file starts with."""
    builder = FitFileBuilder(auto_define=True, min_string_size=50)
    message = FileIdMessage()
    message.type = file_type
    message.manufacturer = manufacturer
    message.product = product
    message.time_created = MILLIS
    message.serial_number = 0x12345678
    builder.add(message)
    return builder


def activity(out):
    """A 10-minute run at 1 Hz around Parco Sempione: positions, altitude, heart rate, distance;
    60 s on a treadmill-like stretch without position; a developer field on every record; a
    session with the totals."""
    builder = new_file(FileType.ACTIVITY, Manufacturer.GARMIN.value, product=3113)

    developer = DeveloperDataIdMessage()
    developer.application_id = b"data4help-test!!"
    developer.developer_data_index = 0
    builder.add(developer)
    description = FieldDescriptionMessage()
    description.developer_data_index = 0
    description.field_definition_number = 0
    description.fit_base_type_id = BaseType.UINT16
    description.field_name = "stryd_power"
    description.units = "watts"
    builder.add(description)

    event = EventMessage()
    event.event = Event.TIMER
    event.event_type = EventType.START
    event.timestamp = MILLIS
    builder.add(event)

    expected = []
    distance = 0.0
    for second in range(600):
        angle = 2 * math.pi * second / 600
        latitude = 45.4725 + 0.004 * math.sin(angle)
        longitude = 9.1785 + 0.006 * math.cos(angle)
        indoors = 300 <= second < 360
        rate = 120 + round(40 * math.sin(math.pi * second / 600))
        altitude = 120.0 + 5 * math.sin(angle * 3)
        distance += 3.1
        power = DeveloperField(developer_data_index=0, field_id=0, base_type=BaseType.UINT16, size=2)
        power.set_value(0, 250 + second % 20)
        record = RecordMessage(developer_fields=[power])
        record.timestamp = MILLIS + second * 1000
        if not indoors:
            record.position_lat = latitude
            record.position_long = longitude
        record.heart_rate = rate
        record.enhanced_altitude = altitude
        record.distance = distance
        builder.add(record)
        expected.append({
            "time": iso(MILLIS + second * 1000),
            "latitude": None if indoors else latitude,
            "longitude": None if indoors else longitude,
            "heartRate": rate, "altitude": altitude, "distance": distance,
        })

    session = SessionMessage()
    session.timestamp = MILLIS + 600_000
    session.start_time = MILLIS
    session.sport = Sport.RUNNING
    session.total_elapsed_time = 600.0
    session.total_timer_time = 600.0
    session.total_distance = distance
    session.total_calories = 142
    session.avg_heart_rate = 145
    session.max_heart_rate = 160
    builder.add(session)

    builder.build().to_file(os.path.join(out, "fit-tool-activity.fit"))
    summary = {"sport": "running", "start": iso(MILLIS), "elapsedSeconds": 600.0, "distanceMetres": distance,
               "energyKilocalories": 142, "averageHeartRate": 145, "maximumHeartRate": 160}
    with open(os.path.join(out, "fit-tool-activity.json"), "w") as file:
        json.dump({"creator": "Garmin (product 3113)", "records": expected, "summary": summary}, file)


def course(out):
    """A course file: records along a path, course points at its ends, a lap (as the FIT SDK
    requires of course files)."""
    builder = new_file(FileType.COURSE, Manufacturer.DEVELOPMENT.value, product=0)
    message = CourseMessage()
    message.course_name = "Sempione loop"
    message.sport = Sport.RUNNING
    builder.add(message)
    points = [(45.4755 + 0.0005 * index, 9.1725 + 0.0007 * index) for index in range(40)]
    records = []
    for index, (latitude, longitude) in enumerate(points):
        record = RecordMessage()
        record.timestamp = MILLIS + index * 10_000
        record.position_lat = latitude
        record.position_long = longitude
        record.distance = index * 80.0
        records.append(record)
        builder.add(record)
    for name, kind, record in (("start", CoursePoint.SEGMENT_START, records[0]), ("finish", CoursePoint.SEGMENT_END, records[-1])):
        point = CoursePointMessage()
        point.timestamp = record.timestamp
        point.position_lat = record.position_lat
        point.position_long = record.position_long
        point.type = kind
        point.course_point_name = name
        builder.add(point)
    lap = LapMessage()
    lap.timestamp = MILLIS + 400_000
    lap.start_time = MILLIS
    lap.total_elapsed_time = 390.0
    lap.total_timer_time = 390.0
    lap.total_distance = 39 * 80.0
    builder.add(lap)
    builder.build().to_file(os.path.join(out, "fit-tool-course.fit"))
    with open(os.path.join(out, "fit-tool-course.json"), "w") as file:
        json.dump({"points": [{"latitude": a, "longitude": b} for a, b in points], "coursePoints": 2}, file)


if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    activity(out)
    course(out)
